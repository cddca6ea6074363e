"""fox: the frontend (DESIGN.md "Frontend and jobs"; boot/README.md).

Modules:
    cli         the `fox` command: argument parsing and the client side of each command
    state       the per-cluster state directory, finding and cleaning up after supervisors
    supervisor  the daemon `fox cluster up` leaves running: nodes, switch, jobs, control socket
    switch      the loopback switch (boot/hub.py's) with the place-0 bridge and the key check
    nodes       QEMU nodes of a pool: command lines, address plan, exit statuses
    job         `fox run`'s side of a job: place 0 as a Linux process, output streaming
    siphash     SipHash-2-4 and the AM frame MAC
"""
