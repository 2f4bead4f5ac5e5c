//! The few facts about processes the tmux adapter reads from `/proc`: parent
//! pid, start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot)
//! and argv. Behind a trait so the decisions are unit-tested on a fake tree.

use std::io::Read;

/// Parent and start time of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    pub start: u64,
}

/// Read access to the process table.
pub trait Procs {
    /// `None` when the process does not exist (or cannot be read).
    fn stat(&self, pid: u32) -> Option<ProcStat>;
    /// argv of the process; `None` when unreadable.
    fn cmdline(&self, pid: u32) -> Option<Vec<String>>;
    /// What the process's fd 0 is (`/dev/pts/3`, `pipe:[...]`); `None`
    /// when unreadable.
    fn stdin_target(&self, _pid: u32) -> Option<std::path::PathBuf> {
        None
    }
}

/// The real `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealProcs;

const MAX_STAT_BYTES: u64 = 4096;
const MAX_CMDLINE_BYTES: u64 = 64 * 1024;

fn read_bounded(path: &str, max: u64) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// Parse the text of `/proc/<pid>/stat`: the comm field may hold spaces and
/// parentheses, so fields are counted after the last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); ppid is field 4, starttime field 22.
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some(ProcStat { ppid, start })
}

impl Procs for RealProcs {
    fn stat(&self, pid: u32) -> Option<ProcStat> {
        let bytes = read_bounded(&format!("/proc/{pid}/stat"), MAX_STAT_BYTES)?;
        parse_stat(std::str::from_utf8(&bytes).ok()?)
    }

    fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
        let bytes = read_bounded(&format!("/proc/{pid}/cmdline"), MAX_CMDLINE_BYTES)?;
        Some(bytes.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect())
    }

    fn stdin_target(&self, pid: u32) -> Option<std::path::PathBuf> {
        std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_hostile_comm() {
        let line = "1234 (a) b (c) S 77 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 555666 1000 10 18446744073709551615";
        assert_eq!(parse_stat(line), Some(ProcStat { ppid: 77, start: 555666 }));
        assert_eq!(parse_stat("1 (x) S"), None);
        assert_eq!(parse_stat("no paren"), None);
    }

    #[test]
    fn a_long_argv_is_read_whole_up_to_the_bound() {
        let long = "x".repeat(4000);
        // `read` blocks on the open pipe: the process lives until killed.
        let mut child =
            std::process::Command::new("sh").args(["-c", "read x", "sh", &long]).stdin(std::process::Stdio::piped()).spawn().unwrap();
        // Right after the spawn /proc may still show an empty argv (measured
        // once under load): look again, bounded, until the shell's shows.
        let mut argv = None;
        for _ in 0..500 {
            argv = RealProcs.cmdline(child.id());
            if argv.as_ref().is_some_and(|a| a.len() > 1) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(argv.unwrap(), vec!["sh".to_owned(), "-c".to_owned(), "read x".to_owned(), "sh".to_owned(), long]);
        assert_eq!(RealProcs.stat(u32::MAX), None);
        assert_eq!(RealProcs.cmdline(u32::MAX), None);
    }

    #[test]
    fn own_process_is_readable() {
        let me = RealProcs.stat(std::process::id()).expect("own stat");
        assert!(me.ppid > 0 && me.start > 0);
        assert!(!RealProcs.cmdline(std::process::id()).expect("own cmdline").is_empty());
    }
}
