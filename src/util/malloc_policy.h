// How the process's allocator treats freed memory (glibc malloc).
#pragma once

namespace recur {

// Keeps freed memory in the process for reuse: one arena for every thread, and no allocation
// large enough to get its own mapping (which free() would unmap at once) nor a heap top trimmed
// on free. A sequence state or snapshot of hundreds of MB is then a copy into pages already
// mapped; fresh pages cost a page fault per 4 KiB, which on the VMs measured here (a paravirtual
// MMU) took 1.5-2 s for 184 MB against 0.05 s reused. Call before other threads start; returns
// false if glibc refused a setting (the process then behaves as before). Sanitizer builds:
// nothing to set (their allocator ignores mallopt).
bool keep_freed_memory();

}  // namespace recur
