//! A global allocator that counts the heap bytes live, for benchmarks that measure what
//! something retains (an idle agent, an idle child): declare it with
//! `#[global_allocator] static HEAP: LiveBytes = LiveBytes;` and read [`live_bytes`] around
//! the thing measured.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting the bytes it holds.
pub struct LiveBytes;

/// The heap bytes live now (under [`LiveBytes`] as the global allocator).
pub fn live_bytes() -> isize {
    LIVE.load(Ordering::SeqCst)
}

// SAFETY: forwards to the system allocator and only counts sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}
