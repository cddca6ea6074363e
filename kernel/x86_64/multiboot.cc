#include "multiboot.h"

#include <cstring>

#include "fox/format.h"

namespace fox::boot {
namespace {

template <typename T>
bool Read(const PhysWindow& mem, uint64_t phys, T* out) {
  if (!mem.Contains(phys, sizeof(T))) return false;
  std::memcpy(out, mem.At(phys), sizeof(T));
  return true;
}

// Copies a NUL-terminated string of at most `limit` bytes that lies in `mem`.
bool CopyString(const PhysWindow& mem, uint64_t phys, uint64_t limit, char* dst, size_t dst_size) {
  size_t n = 0;
  for (;; ++n) {
    if (n >= limit || !mem.Contains(phys + n, 1)) return false;
    char c = char(*mem.At(phys + n));
    if (c == '\0') break;
    if (n + 1 < dst_size) dst[n] = c;
  }
  dst[n + 1 < dst_size ? n : dst_size - 1] = '\0';
  return n + 1 <= dst_size;  // false when truncated
}

Result<void> Fail(char* error, size_t error_size, const char* what) {
  Format(error, error_size, "malformed boot information: %s", what);
  return Error::kCorrupt;
}

struct Mb1Info {
  uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
  uint32_t syms[4];
  uint32_t mmap_length, mmap_addr;
  uint32_t drives_length, drives_addr, config_table, boot_loader_name;
};

Result<void> AddRegion(BootInfo* out, uint64_t base, uint64_t length, uint32_t type, char* error, size_t error_size) {
  if (length == 0) return Ok();
  if (base + length < base) return Fail(error, error_size, "memory region wraps around");
  if (out->num_regions == BootInfo::kMaxRegions) return Fail(error, error_size, "too many memory regions");
  MemoryType t = type >= 1 && type <= 5 ? MemoryType(type) : MemoryType::kReserved;
  out->regions[out->num_regions++] = MemoryRegion{base, length, t};
  return Ok();
}

Result<void> ParseMultiboot1(uint64_t info, const PhysWindow& mem, BootInfo* out, char* error, size_t error_size) {
  Mb1Info mbi;
  if (!Read(mem, info, &mbi)) return Fail(error, error_size, "multiboot1 info outside memory");
  out->protocol = 1;
  out->cmdline_has_image = true;
  out->info_start = info;
  out->info_end = info + sizeof mbi;
  if (mbi.flags & (1u << 2)) {
    if (!CopyString(mem, mbi.cmdline, BootInfo::kMaxCommandLine + 1, out->cmdline, sizeof out->cmdline)) {
      return Fail(error, error_size, "command line unterminated, unreadable or longer than 4096 bytes");
    }
  }
  if (mbi.flags & (1u << 9)) {
    CopyString(mem, mbi.boot_loader_name, sizeof out->loader, out->loader, sizeof out->loader);
  }
  if (!(mbi.flags & (1u << 6))) return Fail(error, error_size, "multiboot1 loader gave no memory map");
  uint64_t p = mbi.mmap_addr;
  uint64_t end = uint64_t(mbi.mmap_addr) + mbi.mmap_length;
  while (p < end) {
    struct __attribute__((packed)) {
      uint32_t size;
      uint64_t base, length;
      uint32_t type;
    } entry;
    uint32_t entry_size;
    if (p + 4 > end || !Read(mem, p, &entry_size)) return Fail(error, error_size, "memory map entry unreadable");
    entry.size = entry_size;
    if (entry.size < 20 || p + 4 + entry.size > end) return Fail(error, error_size, "memory map entry size");
    if (!Read(mem, p, &entry)) return Fail(error, error_size, "memory map entry unreadable");
    FOX_TRY(AddRegion(out, entry.base, entry.length, entry.type, error, error_size));
    p += 4 + uint64_t(entry.size);
  }
  return Ok();
}

Result<void> ParseMultiboot2(uint64_t info, const PhysWindow& mem, BootInfo* out, char* error, size_t error_size) {
  uint32_t header[2];
  if ((info & 7) != 0 || !Read(mem, info, &header)) return Fail(error, error_size, "multiboot2 info pointer");
  uint32_t total = header[0];
  if (total < 16 || !mem.Contains(info, total)) return Fail(error, error_size, "multiboot2 total size");
  out->protocol = 2;
  out->cmdline_has_image = false;
  out->info_start = info;
  out->info_end = info + total;
  bool saw_end = false;
  bool saw_mmap = false;
  uint64_t end = info + total;
  for (uint64_t p = info + 8; p + 8 <= end;) {
    uint32_t tag[2];
    Read(mem, p, &tag);
    uint32_t type = tag[0], size = tag[1];
    if (size < 8 || size > end - p) return Fail(error, error_size, "multiboot2 tag size");
    uint64_t body = p + 8;
    uint32_t body_size = size - 8;
    if (type == 0) {
      saw_end = true;
      break;
    }
    switch (type) {
      case 1:  // command line
        if (!CopyString(mem, body, body_size, out->cmdline, sizeof out->cmdline)) {
          return Fail(error, error_size, "command line unterminated or longer than 4096 bytes");
        }
        break;
      case 2:  // boot loader name
        CopyString(mem, body, body_size, out->loader, sizeof out->loader);
        break;
      case 6: {  // memory map
        uint32_t entry_size, entry_version;
        if (body_size < 8) return Fail(error, error_size, "memory map tag too small");
        Read(mem, body, &entry_size);
        Read(mem, body + 4, &entry_version);
        if (entry_size < 24 || entry_size % 8 != 0) return Fail(error, error_size, "memory map entry size");
        for (uint64_t e = body + 8; e + entry_size <= body + body_size; e += entry_size) {
          struct {
            uint64_t base, length;
            uint32_t type, reserved;
          } entry;
          Read(mem, e, &entry);
          FOX_TRY(AddRegion(out, entry.base, entry.length, entry.type, error, error_size));
        }
        saw_mmap = true;
        break;
      }
      case 14:    // ACPI 1.0 RSDP
      case 15: {  // ACPI 2.0+ RSDP
        size_t n = body_size < sizeof out->rsdp_copy ? body_size : sizeof out->rsdp_copy;
        if (n < 20) return Fail(error, error_size, "ACPI RSDP tag too small");
        if (type == 15 || !out->has_rsdp_copy) {
          std::memset(out->rsdp_copy, 0, sizeof out->rsdp_copy);
          std::memcpy(out->rsdp_copy, mem.At(body), n);
          out->has_rsdp_copy = true;
        }
        break;
      }
      default: break;
    }
    p += (uint64_t(size) + 7) & ~uint64_t(7);
  }
  if (!saw_end) return Fail(error, error_size, "multiboot2 end tag missing");
  if (!saw_mmap) return Fail(error, error_size, "multiboot2 loader gave no memory map");
  return Ok();
}

}  // namespace

Result<void> ParseBootInfo(uint32_t magic, uint64_t info_phys, const PhysWindow& mem, BootInfo* out, char* error,
                           size_t error_size) {
  *out = BootInfo{};
  if (error_size > 0) error[0] = '\0';
  if (magic == kMultiboot1Magic) return ParseMultiboot1(info_phys, mem, out, error, error_size);
  if (magic == kMultiboot2Magic) return ParseMultiboot2(info_phys, mem, out, error, error_size);
  Format(error, error_size, "not started by a multiboot loader (magic %#x)", magic);
  return Error::kUnsupported;
}

}  // namespace fox::boot
