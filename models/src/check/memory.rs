//! How much memory this process holds, for searches that must stop at a budget instead
//! of taking the machine down.

/// Resident memory of this process in bytes, where the kernel says (Linux); `None`
/// elsewhere, and a search then has no memory budget to enforce.
pub fn resident_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
