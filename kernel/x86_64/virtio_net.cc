// virtio-net driver (see virtio_net.h; virtio 1.0 §4.1 PCI transport, §2.4
// split virtqueues, §5.1 network device; legacy interface §4.1.4.8 and
// virtio 0.9.5).
//
// Two transports drive the same rings. Modern: registers in memory BARs
// located by vendor capabilities, rings at any address, 12-byte header.
// Legacy (a device with no modern capabilities, e.g. QEMU's
// disable-modern=on): registers in I/O BAR0, one page-aligned ring block
// given by page frame number (descriptors, avail ring, used ring aligned to
// 4096), queue-notify port, 10-byte header.
//
// Interrupts: one MSI-X vector for the device when it has MSI-X; otherwise
// its INTx pin, on the ISA IRQ line the firmware routed it to (the
// function's Interrupt Line register), level triggered through the IOAPIC.
// INTx lines may be shared, so the handler reads the device's ISR status
// (which also lowers the line) before looking at the rings. The pin is set
// level triggered before the device goes live and unmasked only once the
// device is registered, so a raised line always finds its handler.
//
// One receive and one transmit queue. Receive buffers are 2 KiB slots posted
// at start and re-posted after each frame is handed to the receive handler,
// at interrupt level on kernel core 0. Transmit copies the frame into a slot;
// completed slots are reclaimed lazily on the next send, so the transmit
// queue asks for no interrupts (VIRTQ_AVAIL_F_NO_INTERRUPT). Ring memory
// comes from the page allocator: identity mapped, so addresses are physical.
#include "virtio_net.h"

#include <atomic>
#include <cstring>
#include <new>

#include "cpu.h"
#include "fox/irq_spinlock.h"
#include "fox/log.h"
#include "fox/nic.h"
#include "fox/once.h"
#include "interrupts.h"
#include "ioapic.h"
#include "memory.h"
#include "pci.h"
#include "percpu.h"

namespace fox::virtio_net {
namespace {

constexpr uint16_t kVendor = 0x1AF4;
constexpr uint64_t kFeatureMac = 1ull << 5;
constexpr uint64_t kFeatureVersion1 = 1ull << 32;
constexpr uint8_t kStatusAck = 1, kStatusDriver = 2, kStatusDriverOk = 4, kStatusFeaturesOk = 8, kStatusFailed = 128;
constexpr uint16_t kDescWrite = 2;         // device writes this buffer
constexpr uint16_t kAvailNoInterrupt = 1;  // avail ring flag: no used-buffer interrupts, please
constexpr uint8_t kIsrQueue = 1;           // ISR status: a queue has used buffers
constexpr size_t kSlot = 2048;
constexpr size_t kHeader = 12;         // struct virtio_net_hdr with VERSION_1
constexpr size_t kLegacyHeader = 10;   // without VERSION_1 or MRG_RXBUF: no num_buffers
constexpr size_t kLegacyAlign = 4096;  // used ring alignment, and the unit of the queue PFN
constexpr uint16_t kNoVector = 0xFFFF;

// Legacy register offsets in I/O BAR0 (virtio 0.9.5 / virtio 1.0 §4.1.4.8).
enum LegacyReg : uint16_t {
  kLegacyDeviceFeatures = 0,     // u32, read
  kLegacyGuestFeatures = 4,      // u32, write
  kLegacyQueuePfn = 8,           // u32: ring address >> 12
  kLegacyQueueSize = 12,         // u16, read only
  kLegacyQueueSelect = 14,       // u16
  kLegacyQueueNotify = 16,       // u16
  kLegacyStatus = 18,            // u8
  kLegacyIsr = 19,               // u8
  kLegacyConfigVector = 20,      // u16, only while MSI-X is enabled
  kLegacyQueueVector = 22,       // u16, only while MSI-X is enabled
  kLegacyDeviceConfigMsiX = 24,  // device config with MSI-X enabled
  kLegacyDeviceConfigIntx = 20,  // device config without MSI-X
};

inline uint32_t Inl(uint16_t port) {
  uint32_t v;
  asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
constexpr int kMaxNics = 4;

struct CommonCfg {
  uint32_t device_feature_select, device_feature, driver_feature_select, driver_feature;
  uint16_t msix_config, num_queues;
  uint8_t device_status, config_generation;
  uint16_t queue_select, queue_size, queue_msix_vector, queue_enable, queue_notify_off;
  uint64_t queue_desc, queue_driver, queue_device;
};

struct Desc {
  uint64_t addr;
  uint32_t len;
  uint16_t flags, next;
};

struct Queue {
  uint16_t size = 0;
  Desc* desc = nullptr;
  volatile uint16_t* avail = nullptr;  // flags, idx, ring[size]
  volatile uint8_t* used = nullptr;    // flags, idx, {id u32, len u32}[size]
  volatile uint16_t* notify = nullptr;
  uint8_t* slots = nullptr;  // size * kSlot bytes
  uint16_t avail_idx = 0, used_seen = 0;

  uint16_t UsedIdx() const { return *reinterpret_cast<volatile const uint16_t*>(used + 2); }
  void UsedElem(uint16_t i, uint32_t* id, uint32_t* len) const {
    auto* e = reinterpret_cast<volatile const uint32_t*>(used + 4 + 8 * (i % size));
    *id = e[0];
    *len = e[1];
  }
  void Publish(uint16_t desc_index) {
    avail[2 + avail_idx % size] = desc_index;
    asm volatile("" ::: "memory");  // x86 is TSO: stores stay ordered
    ++avail_idx;
    avail[1] = avail_idx;
  }
};

class VirtioNet final : public nic::Nic {
 public:
  Result<void> Start(const pci::Device& dev);
  bool legacy() const { return io_ != 0; }

  nic::MacAddress Mac() const override { return mac_; }
  size_t Mtu() const override { return 1500; }
  Result<void> Send(const void* frame, size_t length) override;
  void SetRxHandler(nic::RxHandler handler, void* context) override {
    rx_context_.store(context, std::memory_order_relaxed);
    rx_handler_.store(handler, std::memory_order_release);
  }
  nic::Stats GetStats() const override {
    return nic::Stats{rx_packets_, rx_bytes_, rx_dropped_, tx_packets_, tx_bytes_, tx_dropped_, interrupts_};
  }

  void OnInterrupt();  // interrupt context
  // Unmasks the INTx line (after the device is registered); no-op with MSI-X.
  Result<void> ArmInterrupt();
  bool intx() const { return intx_line_ != 0; }

 private:
  Result<void> StartModern();
  Result<void> StartLegacy(uint16_t io);
  Result<void> EnableInterrupt();
  void StartReceiving();
  Result<void> AllocateSlots(Queue* q);
  Result<void> SetUpQueue(uint16_t index, Queue* q);
  Result<void> SetUpLegacyQueue(uint16_t index, Queue* q);
  uint16_t QueueVector() const { return intx() ? kNoVector : 0; }  // MSI-X table entry 0
  uint8_t ReadIsr() { return legacy() ? x86::Inb(uint16_t(io_ + kLegacyIsr)) : *isr_; }
  void SetStatus(uint8_t status) {
    if (legacy()) {
      x86::Outb(uint16_t(io_ + kLegacyStatus), status);
    } else {
      common_->device_status = status;
    }
  }
  uint8_t Status() const { return legacy() ? x86::Inb(uint16_t(io_ + kLegacyStatus)) : common_->device_status; }
  void Notify(const Queue& q, uint16_t index) {
    if (legacy()) {
      x86::Outw(uint16_t(io_ + kLegacyQueueNotify), index);
    } else {
      *q.notify = index;
    }
  }

  pci::Device dev_{};
  uint16_t io_ = 0;  // legacy I/O BAR0; 0 for the modern interface
  size_t header_ = kHeader;
  volatile CommonCfg* common_ = nullptr;
  volatile uint8_t* notify_base_ = nullptr;
  uint32_t notify_multiplier_ = 0;
  volatile uint8_t* device_cfg_ = nullptr;
  volatile uint8_t* isr_ = nullptr;  // modern ISR status (read to acknowledge INTx)
  uint8_t intx_line_ = 0;            // ISA IRQ of the INTx pin; 0 = MSI-X
  nic::MacAddress mac_{};
  Queue rx_, tx_;
  IrqSpinLock tx_lock_;
  uint16_t tx_free_ GUARDED_BY(tx_lock_) = 0;  // descriptors not in flight
  std::atomic<nic::RxHandler> rx_handler_{nullptr};
  std::atomic<void*> rx_context_{nullptr};
  uint64_t rx_packets_ = 0, rx_bytes_ = 0, rx_dropped_ = 0, tx_packets_ = 0, tx_bytes_ = 0, tx_dropped_ = 0,
           interrupts_ = 0;
};

VirtioNet* g_nics[kMaxNics];
// Set once each slot of g_nics below it is written: the interrupt handler
// reads it while later devices are still being started.
std::atomic<int> g_count{0};

void* AllocZeroed(size_t bytes) { return memory::AllocPagesZeroed(bytes); }

Result<void> VirtioNet::SetUpQueue(uint16_t index, Queue* q) {
  common_->queue_select = index;
  uint16_t size = common_->queue_size;
  if (size == 0) return Error::kUnsupported;
  if (size > 256) {
    size = 256;
    common_->queue_size = size;
  }
  q->size = size;
  q->desc = static_cast<Desc*>(AllocZeroed(16 * size));
  q->avail = static_cast<volatile uint16_t*>(AllocZeroed(6 + 2 * size));
  q->used = static_cast<volatile uint8_t*>(AllocZeroed(6 + 8 * size));
  if (!q->desc || !q->avail || !q->used) return Error::kNoMemory;
  FOX_TRY(AllocateSlots(q));
  common_->queue_desc = reinterpret_cast<uintptr_t>(q->desc);
  common_->queue_driver = reinterpret_cast<uintptr_t>(q->avail);
  common_->queue_device = reinterpret_cast<uintptr_t>(q->used);
  common_->queue_msix_vector = QueueVector();
  if (common_->queue_msix_vector != QueueVector()) return Error::kUnsupported;
  q->notify = reinterpret_cast<volatile uint16_t*>(notify_base_ + common_->queue_notify_off * notify_multiplier_);
  common_->queue_enable = 1;
  return Ok();
}

// Receive/transmit buffers, one kSlot per descriptor.
Result<void> VirtioNet::AllocateSlots(Queue* q) {
  q->slots = static_cast<uint8_t*>(AllocZeroed(kSlot * q->size));
  if (!q->slots) return Error::kNoMemory;
  for (uint16_t i = 0; i < q->size; ++i) {
    q->desc[i].addr = reinterpret_cast<uintptr_t>(q->slots + kSlot * i);
    q->desc[i].len = kSlot;
  }
  return Ok();
}

// The legacy queue size is fixed by the device, and the three rings sit in
// one block the device locates from its page frame number alone.
Result<void> VirtioNet::SetUpLegacyQueue(uint16_t index, Queue* q) {
  x86::Outw(uint16_t(io_ + kLegacyQueueSelect), index);
  uint16_t size = x86::Inw(uint16_t(io_ + kLegacyQueueSize));
  if (size == 0 || (size & (size - 1)) != 0) return Error::kUnsupported;
  if (Inl(uint16_t(io_ + kLegacyQueuePfn)) != 0) return Error::kBusy;  // already in use
  size_t avail_end = 16 * size_t(size) + 6 + 2 * size_t(size);
  size_t used_offset = (avail_end + kLegacyAlign - 1) & ~(kLegacyAlign - 1);
  size_t bytes = used_offset + 6 + 8 * size_t(size);
  auto* block = static_cast<uint8_t*>(AllocZeroed(bytes));
  if (block == nullptr) return Error::kNoMemory;
  uintptr_t phys = reinterpret_cast<uintptr_t>(block);  // identity mapped, page aligned
  if ((phys & (kLegacyAlign - 1)) != 0 || (phys >> 12) > 0xFFFFFFFFu) return Error::kUnsupported;
  q->size = size;
  q->desc = reinterpret_cast<Desc*>(block);
  q->avail = reinterpret_cast<volatile uint16_t*>(block + 16 * size_t(size));
  q->used = block + used_offset;
  FOX_TRY(AllocateSlots(q));
  if (!intx()) {  // the vector registers exist only while MSI-X is on
    x86::Outw(uint16_t(io_ + kLegacyQueueVector), QueueVector());
    if (x86::Inw(uint16_t(io_ + kLegacyQueueVector)) != QueueVector()) return Error::kUnsupported;
  }
  x86::Outl(uint16_t(io_ + kLegacyQueuePfn), uint32_t(phys >> 12));
  return Ok();
}

Result<void> VirtioNet::Start(const pci::Device& dev) {
  dev_ = dev;
  pci::EnableMemoryAndDma(dev);
  Result<void> r = StartModern();
  if (!r.ok() && r.error() == Error::kNotFound) {
    uint16_t io = pci::IoBar(dev, 0);
    if (io == 0) return Error::kUnsupported;
    r = StartLegacy(io);
  }
  if (!r.ok()) SetStatus(kStatusFailed);
  return r;
}

// Every NIC's handler looks at every NIC: an INTx line may be shared, and
// an MSI-X NIC with nothing new returns at once.
bool HandleNicInterrupt(interrupts::Frame*) {
  int count = g_count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) g_nics[i]->OnInterrupt();
  return true;
}

// One MSI-X vector for both queues, on kernel core 0 (table entry 0); a
// device without MSI-X gets a vector for its INTx line, unmasked later by
// ArmInterrupt.
Result<void> VirtioNet::EnableInterrupt() {
  if (pci::FindCapability(dev_, 0x11) == 0) {
    uint8_t pin = pci::Read8(dev_, 0x3D), line = pci::Read8(dev_, 0x3C);
    if (pin == 0 || pin > 4) {
      LOG_WARN("virtio-net: device at %02x:%02x.%x has neither MSI-X nor an interrupt pin", dev_.bus, dev_.slot,
               dev_.function);
      return Error::kUnsupported;
    }
    if (line == 0 || line >= 16) {
      LOG_WARN(
          "virtio-net: device at %02x:%02x.%x has no MSI-X and the firmware routed its INTx%c to no IRQ "
          "(interrupt line %u)",
          dev_.bus, dev_.slot, dev_.function, 'A' + pin - 1, line);
      return Error::kUnsupported;
    }
    FOX_TRY_ASSIGN(uint8_t vector, interrupts::AllocateVector(HandleNicInterrupt));
    // Level triggered (still masked) before the device can raise the line.
    if (!ioapic::RoutePciLine(line, vector, percpu::Of(0)->apic_id).ok()) {
      LOG_WARN("virtio-net: device at %02x:%02x.%x: no IOAPIC serves IRQ %u", dev_.bus, dev_.slot, dev_.function, line);
      return Error::kUnsupported;
    }
    intx_line_ = line;
    pci::Write16(dev_, 0x04, uint16_t(pci::Read16(dev_, 0x04) & ~0x400));  // INTx not disabled
    LOG_INFO("virtio-net: device at %02x:%02x.%x has no MSI-X: INTx%c on IRQ %u, level triggered", dev_.bus, dev_.slot,
             dev_.function, 'A' + pin - 1, line);
    return Ok();
  }
  FOX_TRY_ASSIGN(pci::MsiX msix, pci::EnableMsiX(dev_));
  FOX_TRY_ASSIGN(uint8_t vector, interrupts::AllocateVector(HandleNicInterrupt));
  pci::SetMsiXEntry(msix, 0, percpu::Of(0)->apic_id, vector);
  return Ok();
}

Result<void> VirtioNet::ArmInterrupt() {
  if (!intx()) return Ok();
  return ioapic::Unmask(intx_line_);
}

// Every receive slot goes to the device, then the device goes live.
void VirtioNet::StartReceiving() {
  {
    IrqSpinGuard guard(tx_lock_);
    tx_free_ = tx_.size;
  }
  tx_.avail[0] = kAvailNoInterrupt;  // completed sends are reclaimed lazily
  for (uint16_t i = 0; i < rx_.size; ++i) {
    rx_.desc[i].flags = kDescWrite;
    rx_.Publish(i);
  }
  SetStatus(Status() | kStatusDriverOk);
  Notify(rx_, 0);
}

Result<void> VirtioNet::StartLegacy(uint16_t io) {
  io_ = io;
  header_ = kLegacyHeader;
  pci::EnableIo(dev_);
  SetStatus(0);  // reset
  SetStatus(kStatusAck);
  SetStatus(kStatusAck | kStatusDriver);
  uint32_t offered = Inl(uint16_t(io_ + kLegacyDeviceFeatures));
  // Only the low 32 feature bits exist here; no VERSION_1, no MRG_RXBUF.
  uint32_t wanted = uint32_t(offered & kFeatureMac);
  x86::Outl(uint16_t(io_ + kLegacyGuestFeatures), wanted);
  // MSI-X must be on before the vector registers exist and the device
  // config moves from offset 20 to 24.
  FOX_TRY(EnableInterrupt());
  if (!intx()) x86::Outw(uint16_t(io_ + kLegacyConfigVector), kNoVector);  // no configuration-change interrupts
  FOX_TRY(SetUpLegacyQueue(0, &rx_));
  FOX_TRY(SetUpLegacyQueue(1, &tx_));
  uint16_t config = intx() ? kLegacyDeviceConfigIntx : kLegacyDeviceConfigMsiX;
  for (int i = 0; i < 6; ++i) {
    mac_[i] = (wanted & kFeatureMac) ? x86::Inb(uint16_t(io_ + config + i)) : uint8_t(i == 0 ? 0x02 : i);
  }
  StartReceiving();
  return Ok();
}

Result<void> VirtioNet::StartModern() {
  const pci::Device& dev = dev_;
  // Vendor capabilities (id 9) locate the transport's structures in BARs.
  for (uint8_t cap = pci::FindCapability(dev, 0x09); cap != 0; cap = pci::FindCapability(dev, 0x09, cap)) {
    uint8_t type = pci::Read8(dev, uint8_t(cap + 3));
    uint8_t bar = pci::Read8(dev, uint8_t(cap + 4));
    uint32_t offset = pci::Read32(dev, uint8_t(cap + 8));
    uint64_t base = pci::MemoryBar(dev, bar);
    if (base == 0) continue;
    auto* p = reinterpret_cast<volatile uint8_t*>(base + offset);
    if (type == 1) common_ = reinterpret_cast<volatile CommonCfg*>(p);
    if (type == 2) {
      notify_base_ = p;
      notify_multiplier_ = pci::Read32(dev, uint8_t(cap + 16));
    }
    if (type == 3) isr_ = p;
    if (type == 4) device_cfg_ = p;
  }
  if (common_ == nullptr || notify_base_ == nullptr || device_cfg_ == nullptr || isr_ == nullptr) {
    common_ = nullptr;
    return Error::kNotFound;  // no modern interface: try legacy
  }

  common_->device_status = 0;  // reset
  while (common_->device_status != 0) {
  }
  common_->device_status = kStatusAck;
  common_->device_status = kStatusAck | kStatusDriver;
  common_->device_feature_select = 0;
  uint64_t offered = common_->device_feature;
  common_->device_feature_select = 1;
  offered |= uint64_t(common_->device_feature) << 32;
  if (!(offered & kFeatureVersion1)) return Error::kUnsupported;
  uint64_t wanted = kFeatureVersion1 | (offered & kFeatureMac);
  common_->driver_feature_select = 0;
  common_->driver_feature = uint32_t(wanted);
  common_->driver_feature_select = 1;
  common_->driver_feature = uint32_t(wanted >> 32);
  common_->device_status = kStatusAck | kStatusDriver | kStatusFeaturesOk;
  if (!(common_->device_status & kStatusFeaturesOk)) return Error::kUnsupported;

  FOX_TRY(EnableInterrupt());
  common_->msix_config = kNoVector;  // no configuration-change interrupts
  FOX_TRY(SetUpQueue(0, &rx_));
  FOX_TRY(SetUpQueue(1, &tx_));
  for (int i = 0; i < 6; ++i) mac_[i] = (wanted & kFeatureMac) ? device_cfg_[i] : uint8_t(i == 0 ? 0x02 : i);
  StartReceiving();
  return Ok();
}

void VirtioNet::OnInterrupt() {
  // INTx: reading the ISR status acknowledges the device and lowers the
  // line; a clear queue bit means the interrupt was another device's.
  if (intx() && (ReadIsr() & kIsrQueue) == 0) return;
  ++interrupts_;
  nic::RxHandler handler = rx_handler_.load(std::memory_order_acquire);
  void* context = rx_context_.load(std::memory_order_relaxed);
  bool posted = false;
  while (rx_.used_seen != rx_.UsedIdx()) {
    uint32_t id, len;
    rx_.UsedElem(rx_.used_seen++, &id, &len);
    if (id >= rx_.size || len < header_ || len > kSlot) {
      ++rx_dropped_;
    } else if (handler == nullptr) {
      ++rx_dropped_;
    } else {
      ++rx_packets_;
      rx_bytes_ += len - header_;
      handler(rx_.slots + kSlot * id + header_, len - header_, context);
    }
    if (id < rx_.size) {
      rx_.desc[id].len = kSlot;
      rx_.desc[id].flags = kDescWrite;
      rx_.Publish(uint16_t(id));
      posted = true;
    }
  }
  if (posted) Notify(rx_, 0);
}

Result<void> VirtioNet::Send(const void* frame, size_t length) {
  if (length > Mtu() + 14 || length < 14) {
    ++tx_dropped_;
    return Error::kInvalidArgument;
  }
  IrqSpinGuard guard(tx_lock_);
  // Reclaim what the device has finished with.
  while (tx_.used_seen != tx_.UsedIdx()) {
    ++tx_.used_seen;
    ++tx_free_;
  }
  if (tx_free_ == 0) {
    ++tx_dropped_;
    return Error::kBusy;
  }
  --tx_free_;
  // Slots are used round-robin, in step with the available ring.
  uint16_t d = tx_.avail_idx % tx_.size;
  uint8_t* slot = tx_.slots + kSlot * d;
  std::memset(slot, 0, header_);
  std::memcpy(slot + header_, frame, length);
  tx_.desc[d].len = uint32_t(header_ + length);
  tx_.desc[d].flags = 0;
  tx_.Publish(d);
  Notify(tx_, 1);
  ++tx_packets_;
  tx_bytes_ += length;
  return Ok();
}

// Finds and starts every virtio network device, in PCI order. Logs and
// skips a device it cannot start.
void StartDevices() {
  pci::Enumerate([](const pci::Device& d) {
    int count = g_count.load(std::memory_order_relaxed);
    if (d.vendor != kVendor || (d.device != 0x1000 && d.device != 0x1041) || count == kMaxNics) return;
    auto* nic = new VirtioNet;
    auto r = nic->Start(d);
    if (!r.ok()) {
      LOG_WARN("virtio-net: device at %02x:%02x.%x not started: %s", d.bus, d.slot, d.function, ErrorName(r.error()));
      delete nic;
      return;
    }
    g_nics[count] = nic;
    g_count.store(count + 1, std::memory_order_release);
    if (auto armed = nic->ArmInterrupt(); !armed.ok()) {
      LOG_WARN("virtio-net: no IOAPIC pin for the INTx line of %02x:%02x.%x: %s", d.bus, d.slot, d.function,
               ErrorName(armed.error()));
    }
    auto mac = nic->Mac();
    LOG_INFO("virtio-net: nic%d at %02x:%02x.%x, MAC %02x:%02x:%02x:%02x:%02x:%02x, %s interface", count, d.bus, d.slot,
             d.function, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], nic->legacy() ? "legacy" : "modern");
  });
}

Once g_started;

}  // namespace

void EnsureStarted() { g_started.Run(StartDevices); }

}  // namespace fox::virtio_net

namespace fox::nic {
int Count() {
  virtio_net::EnsureStarted();
  return virtio_net::g_count.load(std::memory_order_acquire);
}
Nic* Get(int index) { return index >= 0 && index < Count() ? virtio_net::g_nics[index] : nullptr; }
}  // namespace fox::nic
