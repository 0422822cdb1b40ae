//! The `strain` binary: everything happens in [`strain::cli::run`]; this prints its error.

fn main() {
    fixed_mmap_threshold();
    strain::proto::install();
    let code = match strain::cli::run(std::env::args_os(), strain::proto::COMMANDS) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("strain: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// Blocks of 128 KiB and more (a latency histogram is about 190 KiB) are mapped on their own and
/// unmapped when freed, so they do not stay resident after use.
///
/// glibc raises its mmap threshold to the size of the largest mapped block freed, after which
/// such blocks come from the threads' heaps, where one freed between blocks still in use stays
/// resident: a 10-minute soak's RSS rose in steps of about a histogram's size
/// (docs/benchmarks.md, issue 33's soaks). Setting the threshold also stops its moving.
fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
