#include "acpi.h"

#include <cstring>

#include "cpu.h"
#include "fox/log.h"

namespace fox::acpi {
namespace {

struct __attribute__((packed)) Rsdp {
  char signature[8];
  uint8_t checksum;
  char oem_id[6];
  uint8_t revision;
  uint32_t rsdt;
  uint32_t length;
  uint64_t xsdt;
  uint8_t ext_checksum, reserved[3];
};

Rsdp g_rsdp;
bool g_have_rsdp = false;
void ParseMadt();

// A plain loop: it runs a few times at boot, where under an emulator its
// unrolled form cost more to translate (190 instructions) than to run.
bool Checksum(const void* p, size_t n) {
  uint8_t sum = 0;
#pragma clang loop unroll(disable) vectorize(disable)
  for (size_t i = 0; i < n; ++i) sum += static_cast<const uint8_t*>(p)[i];
  return sum == 0;
}

// Tables live in reserved RAM below the top of the identity map.
bool Plausible(uint64_t phys) { return phys >= 0x1000 && phys < (1ull << 39); }

const SdtHeader* Table(uint64_t phys) {
  if (!Plausible(phys)) return nullptr;
  auto* h = reinterpret_cast<const SdtHeader*>(phys);
  if (h->length < sizeof(SdtHeader) || h->length > (16u << 20) || !Checksum(h, h->length)) return nullptr;
  return h;
}

bool TryRsdp(const uint8_t* p) {
  if (std::memcmp(p, "RSD PTR ", 8) != 0 || !Checksum(p, 20)) return false;
  std::memcpy(&g_rsdp, p, sizeof g_rsdp);
  if (g_rsdp.revision < 2) g_rsdp.xsdt = 0;
  g_have_rsdp = true;
  return true;
}

void Scan(uint64_t start, uint64_t end) {
  for (uint64_t p = start; p + 20 <= end && !g_have_rsdp; p += 16) TryRsdp(reinterpret_cast<const uint8_t*>(p));
}

}  // namespace

void Init(const uint8_t* rsdp_copy) {
  if (rsdp_copy != nullptr) TryRsdp(rsdp_copy);
  if (!g_have_rsdp) {
    uint64_t ebda = uint64_t(*reinterpret_cast<volatile uint16_t*>(0x40E)) << 4;
    if (ebda >= 0x80000 && ebda < 0xA0000) Scan(ebda, ebda + 1024);
    // The BIOS area, its upper half first: BIOSes put the RSDP there (SeaBIOS
    // at about F5000h: 1400 steps instead of 5400; the acpi step under TCG
    // went from 0.78 to 0.74 ms, fox.log=debug).
    Scan(0xF0000, 0x100000);
    Scan(0xE0000, 0xF0000);
  }
  if (!g_have_rsdp) {
    LOG_WARN("acpi: no RSDP found; one core assumed, no ACPI power-off");
    return;
  }
  ParseMadt();
}

const SdtHeader* FindTable(const char signature[4], int index) {
  if (!g_have_rsdp) return nullptr;
  bool x = g_rsdp.xsdt != 0;
  const SdtHeader* root = Table(x ? g_rsdp.xsdt : g_rsdp.rsdt);
  if (root == nullptr) return nullptr;
  size_t width = x ? 8 : 4;
  size_t n = (root->length - sizeof(SdtHeader)) / width;
  auto* entries = reinterpret_cast<const uint8_t*>(root + 1);
  for (size_t i = 0; i < n; ++i) {
    uint64_t phys = 0;
    std::memcpy(&phys, entries + i * width, width);
    const SdtHeader* t = Table(phys);
    if (t != nullptr && std::memcmp(t->signature, signature, 4) == 0 && index-- == 0) return t;
  }
  return nullptr;
}

namespace {
InterruptTopology g_topology;

void ParseMadt() {
  InterruptTopology& t = g_topology;
  const SdtHeader* madt = FindTable("APIC");
  if (madt == nullptr || madt->length < sizeof(SdtHeader) + 8) return;
  auto* base = reinterpret_cast<const uint8_t*>(madt);
  uint32_t lapic32;
  std::memcpy(&lapic32, base + sizeof(SdtHeader), 4);
  t.lapic_address = lapic32;
  auto* p = base + sizeof(SdtHeader) + 8;
  auto* end = base + madt->length;
  while (p + 2 <= end && p[1] >= 2 && p + p[1] <= end) {
    uint8_t type = p[0], len = p[1];
    uint32_t flags = 0;
    if (type == 0 && len >= 8 && t.num_cpus < t.kMaxCpus) {  // processor local APIC
      std::memcpy(&flags, p + 4, 4);
      if (flags & 3) t.cpus[t.num_cpus++] = {p[3], (flags & 1) != 0};
    } else if (type == 9 && len >= 16 && t.num_cpus < t.kMaxCpus) {  // processor local x2APIC
      uint32_t id;
      std::memcpy(&id, p + 4, 4);
      std::memcpy(&flags, p + 8, 4);
      if (flags & 3) t.cpus[t.num_cpus++] = {id, (flags & 1) != 0};
    } else if (type == 1 && len >= 12 && t.num_ioapics < t.kMaxIoApics) {  // IOAPIC
      InterruptTopology::IoApic io{p[2], 0, 0};
      std::memcpy(&io.address, p + 4, 4);
      std::memcpy(&io.gsi_base, p + 8, 4);
      t.ioapics[t.num_ioapics++] = io;
    } else if (type == 2 && len >= 10 && t.num_overrides < t.kMaxOverrides) {  // source override
      InterruptTopology::Override o{p[3], 0, 0};
      std::memcpy(&o.gsi, p + 4, 4);
      std::memcpy(&o.flags, p + 8, 2);
      t.overrides[t.num_overrides++] = o;
    } else if (type == 5 && len >= 12) {  // 64-bit local APIC address override
      std::memcpy(&t.lapic_address, p + 4, 8);
    }
    p += len;
  }
}
}  // namespace

const InterruptTopology& Topology() { return g_topology; }

int CountProcessors() { return g_topology.num_cpus > 0 ? g_topology.num_cpus : 1; }

void PowerOff() {
  const SdtHeader* fadt = FindTable("FACP");
  if (fadt == nullptr || fadt->length < 72) return;
  auto* f = reinterpret_cast<const uint8_t*>(fadt);
  uint32_t dsdt32, pm1a, pm1b, smi_cmd;
  std::memcpy(&dsdt32, f + 40, 4);
  std::memcpy(&smi_cmd, f + 48, 4);
  std::memcpy(&pm1a, f + 64, 4);
  std::memcpy(&pm1b, f + 68, 4);
  uint64_t dsdt_phys = dsdt32;
  if (fadt->length >= 148) {
    uint64_t x;
    std::memcpy(&x, f + 140, 8);
    if (x != 0) dsdt_phys = x;
  }
  const SdtHeader* dsdt = Table(dsdt_phys);
  if (dsdt == nullptr || pm1a == 0) return;
  // Find "_S5_" followed by a package whose first elements are SLP_TYPa/b.
  auto* aml = reinterpret_cast<const uint8_t*>(dsdt);
  for (uint32_t i = sizeof(SdtHeader); i + 12 < dsdt->length; ++i) {
    if (std::memcmp(aml + i, "_S5_", 4) != 0 || aml[i + 4] != 0x12) continue;
    uint32_t j = i + 5;
    j += ((aml[j] >> 6) & 3) + 1;  // PkgLength
    ++j;                           // NumElements
    auto element = [&](uint16_t* out) {
      if (aml[j] == 0x0A) {
        *out = aml[j + 1];
        j += 2;
      }  // BytePrefix
      else if (aml[j] <= 1) {
        *out = aml[j];
        j += 1;
      }  // ZeroOp / OneOp
      else
        *out = 0;
    };
    uint16_t typ_a = 0, typ_b = 0;
    element(&typ_a);
    element(&typ_b);
    // Enable ACPI mode if firmware left it in legacy mode.
    uint8_t acpi_enable = f[52];
    if (smi_cmd != 0 && acpi_enable != 0 && (x86::Inw(uint16_t(pm1a)) & 1) == 0) {
      x86::Outb(uint16_t(smi_cmd), acpi_enable);
      for (int k = 0; k < 1000000 && (x86::Inw(uint16_t(pm1a)) & 1) == 0; ++k) x86::Pause();
    }
    x86::Outw(uint16_t(pm1a), uint16_t((typ_a << 10) | (1 << 13)));
    if (pm1b != 0) x86::Outw(uint16_t(pm1b), uint16_t((typ_b << 10) | (1 << 13)));
    return;
  }
}

}  // namespace fox::acpi
