/* lwIP's compiler/platform header for fox (native compute nodes).
 *
 * lwIP is compiled as C with the native toolchain (glibc headers, clang,
 * x86_64-unknown-none-elf); its few platform needs are served by
 * net/lwip/sys_arch.cc: diagnostics and assertions go to the fox log (an
 * assertion panics), random numbers come from the kernel (RDRAND through
 * musl's getrandom emulation). */
#ifndef FOX_LWIP_ARCH_CC_H
#define FOX_LWIP_ARCH_CC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void fox_lwip_diag(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void fox_lwip_assert(const char* message, const char* file, int line) __attribute__((noreturn));
uint32_t fox_lwip_rand(void);

#ifdef __cplusplus
}
#endif

/* BYTE_ORDER: lwIP's default (little endian), or glibc's <endian.h> where included. */
#define LWIP_PLATFORM_DIAG(x) \
  do {                        \
    fox_lwip_diag x;          \
  } while (0)
#define LWIP_PLATFORM_ASSERT(x) fox_lwip_assert((x), __FILE__, __LINE__)
#define LWIP_RAND() ((u32_t)fox_lwip_rand())
/* lwIP's static memory (pools, heap) in .bss.noinit.*: natively outside the
 * BSS that boot.S zeroes (linker.ld; lwipopts.h MEMP_MEM_INIT), in the BSS
 * elsewhere. */
#define LWIP_DECLARE_MEMORY_ALIGNED(variable_name, size) \
  u8_t variable_name[LWIP_MEM_ALIGN_BUFFER(size)] __attribute__((section(".bss.noinit." #variable_name)))
/* Only the raw API is built: no sockets, so no errno of lwIP's own. */
#define LWIP_ERRNO_STDINCLUDE 1

#endif /* FOX_LWIP_ARCH_CC_H */
