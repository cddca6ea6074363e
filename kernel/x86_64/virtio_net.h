// virtio-net over modern (virtio 1.0) PCI with MSI-X (native). The legacy
// (0.9.5, I/O port) interface is not driven: QEMU's default virtio-net-pci
// device is transitional and offers the modern one.
#pragma once

namespace fox::virtio_net {

// Boot step (after SMP, interrupts set up): finds and starts every virtio
// network device; they become fox::nic::Get(i). Logs and skips a device it
// cannot start.
void Init();

}  // namespace fox::virtio_net
