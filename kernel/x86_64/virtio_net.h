// virtio-net over PCI (native): the modern (virtio 1.0) interface when the
// device offers it (QEMU's default transitional virtio-net-pci does), else
// the legacy (0.9.5, I/O port) interface, e.g. QEMU's disable-modern=on.
// Interrupts by MSI-X, or, for a device without it (QEMU's vectors=0), by
// its INTx pin routed through the IOAPIC.
#pragma once

namespace fox::virtio_net {

// Finds and starts every virtio network device, once, on the first call
// (fox::nic::Count and Get call it: the devices start when the network
// does: ~0.2 ms of PCI scan under TCG that a node without one never pays); they
// become fox::nic::Get(i). Logs and skips a device it cannot start. Any core,
// after the boot.
void EnsureStarted();

}  // namespace fox::virtio_net
