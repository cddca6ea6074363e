// virtio-net over PCI with MSI-X (native): the modern (virtio 1.0)
// interface when the device offers it (QEMU's default transitional
// virtio-net-pci does), else the legacy (0.9.5, I/O port) interface, e.g.
// QEMU's disable-modern=on. A legacy device without MSI-X is skipped (INTx
// routing through the IOAPIC is not implemented).
#pragma once

namespace fox::virtio_net {

// Boot step (after SMP, interrupts set up): finds and starts every virtio
// network device; they become fox::nic::Get(i). Logs and skips a device it
// cannot start.
void Init();

}  // namespace fox::virtio_net
