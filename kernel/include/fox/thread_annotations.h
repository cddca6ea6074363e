// Clang thread-safety annotations (STYLE.md §5). Build with -Wthread-safety.
#pragma once

#if defined(__clang__)
#define FOX_TSA(x) __attribute__((x))
#else
#define FOX_TSA(x)
#endif

#define CAPABILITY(x) FOX_TSA(capability(x))
#define SCOPED_CAPABILITY FOX_TSA(scoped_lockable)
#define GUARDED_BY(x) FOX_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) FOX_TSA(pt_guarded_by(x))
#define REQUIRES(...) FOX_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) FOX_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) FOX_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) FOX_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) FOX_TSA(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS FOX_TSA(no_thread_safety_analysis)
#define ASSERT_CAPABILITY(x) FOX_TSA(assert_capability(x))
#define RETURN_CAPABILITY(x) FOX_TSA(lock_returned(x))
