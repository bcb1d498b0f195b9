//! The processes of one wrangler process group, read from Linux's
//! `/proc`: CPU time (utime + stime of `/proc/<pid>/stat`) and peak
//! resident memory (`VmHWM` of `/proc/<pid>/status`). `bench scale`
//! measures workerd with them, `bench kv` the CPU per operation.

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;
use std::time::Duration;

/// Ticks of `/proc/<pid>/stat`'s times per second (`getconf CLK_TCK`;
/// 100 on every Linux this runs on if `getconf` is missing).
pub(super) fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stat {
    comm: String,
    pgrp: i32,
    /// utime + stime, in clock ticks.
    cpu_ticks: u64,
}

/// Parses a `/proc/<pid>/stat` line. The command name is in parentheses
/// and may hold spaces and parentheses, so fields are counted after its
/// last `)`: state, ppid, pgrp, ... utime is field 14, stime 15.
fn parse_stat(line: &str) -> Option<Stat> {
    let (head, rest) = line.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (state).
    let field = |n: usize| fields.get(n - 3).copied();
    let pgrp = field(5)?.parse().ok()?;
    let utime: u64 = field(14)?.parse().ok()?;
    let stime: u64 = field(15)?.parse().ok()?;
    Some(Stat { comm, pgrp, cpu_ticks: utime.saturating_add(stime) })
}

/// The ids of the processes named `comm` in the process groups `pgrps`
/// (one per script of a run).
pub(super) fn in_groups(pgrps: &[i32], comm: &str) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|s| pgrps.contains(&s.pgrp) && s.comm == comm))
        .collect();
    pids.sort_unstable();
    pids
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// CPU time of `pids` together, in clock ticks (a process gone counts 0).
pub(super) fn cpu_ticks(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|p| stat(*p)).map(|s| s.cpu_ticks).sum()
}

/// CPU time so far of each process in group `pgrp`, summed by command
/// name (`node` for wrangler, `workerd`); empty where there is no /proc.
pub(super) fn cpu_by_command(pgrps: &[i32]) -> BTreeMap<String, Duration> {
    let tick = Duration::from_secs(1).div_f64(clock_ticks());
    let Ok(dir) = fs::read_dir("/proc") else { return BTreeMap::new() };
    let mut by_command = BTreeMap::new();
    for s in
        dir.filter_map(|e| stat(e.ok()?.file_name().to_str()?.parse::<u32>().ok()?)).filter(|s| pgrps.contains(&s.pgrp))
    {
        *by_command.entry(s.comm).or_default() += tick * u32::try_from(s.cpu_ticks).unwrap_or(u32::MAX);
    }
    by_command
}

/// A field in kB of `/proc/<pid>/status` (`VmHWM`, `VmRSS`), in bytes.
fn status_kb(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    Some(line.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? * 1024)
}

/// Peak resident memory (`VmHWM`, since the process started) of each of
/// `pids`, in bytes (0 for a process gone).
pub(super) fn peak_rss(pids: &[u32]) -> Vec<u64> {
    pids.iter()
        .map(|p| fs::read_to_string(format!("/proc/{p}/status")).ok().and_then(|t| status_kb(&t, "VmHWM")))
        .map(Option::unwrap_or_default)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_names() {
        let line = "4242 (work (erd) x) S 1 4200 4200 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 9 0 1 2 3";
        assert_eq!(parse_stat(line), Some(Stat { comm: "work (erd) x".into(), pgrp: 4200, cpu_ticks: 1290 }));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn reads_kb_fields() {
        let text = "Name:\tworkerd\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n";
        assert_eq!(status_kb(text, "VmHWM"), Some(204_800 * 1024));
        assert_eq!(status_kb(text, "VmSwap"), None);
    }

    #[test]
    fn finds_this_process() {
        let me = std::process::id();
        let own = stat(me).map(|s| s.pgrp).unwrap_or(-1);
        let comm = stat(me).map(|s| s.comm).unwrap_or_default();
        assert!(in_groups(&[own], &comm).contains(&me));
        assert!(!in_groups(&[own + 1], &comm).contains(&me));
        assert!(peak_rss(&[me]).iter().all(|b| *b > 0));
    }
}
