//! Was the machine quiet while a test was timed? A figure taken while a
//! browser tab spun a core, or while the hypervisor lent the core to another
//! guest, is not the model's speed on this machine, and nothing in the figure
//! itself says so. On a shared 2-core machine the same pp512 measured
//! anywhere from 387 to 735 t/s minutes apart.
//!
//! Two signals, each cheap enough to read at the edges of every timed phase:
//! - **Other processes' CPU**: every process's accumulated CPU time (sysinfo,
//!   so it works wherever sysinfo does), read when the timed phase starts and
//!   when it ends. Dyno's own processes (this one, its worker and their
//!   children) are left out. A process that started and ended entirely
//!   inside the window is missed: it left nothing to read at either edge.
//! - **Steal time** (Linux `/proc/stat`): CPU time the hypervisor gave to
//!   another guest while this one wanted it.
//!
//! A third, the spread of the repetitions (their coefficient of variation),
//! catches what neither sees, such as a throttling CPU or a noisy
//! neighbour on shared caches. [`judge`] turns the three into a verdict with
//! its reasons; the thresholds are in [`Thresholds`].

use std::collections::HashMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// The kernel's CPU time counters, summed over all CPUs (in clock ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    pub steal: u64,
    pub total: u64,
}

impl CpuTicks {
    /// The aggregate `cpu ` line of `/proc/stat`; `None` when it is missing
    /// or names no steal column (kernels before 2.6.11, or not Linux).
    pub fn parse(proc_stat: &str) -> Option<CpuTicks> {
        let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal [guest guest_nice];
        // guest time is already counted in user, so it is not added again.
        let steal = *v.get(7)?;
        let total = v.iter().take(8).sum();
        Some(CpuTicks { steal, total })
    }

    fn read() -> Option<CpuTicks> {
        CpuTicks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }
}

/// Every process's CPU time at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    /// pid → (name, parent, accumulated CPU milliseconds).
    processes: HashMap<u32, (String, Option<u32>, u64)>,
    ticks: Option<CpuTicks>,
}

impl Snapshot {
    /// Built from given figures, for tests of [`contention`].
    pub fn from_parts(
        at: Instant,
        processes: impl IntoIterator<Item = (u32, String, Option<u32>, u64)>,
        ticks: Option<CpuTicks>,
    ) -> Snapshot {
        Snapshot {
            at,
            processes: processes
                .into_iter()
                .map(|(pid, name, parent, ms)| (pid, (name, parent, ms)))
                .collect(),
            ticks,
        }
    }
}

impl Snapshot {
    /// When it was read.
    pub fn at(&self) -> Instant {
        self.at
    }
}

/// Reads snapshots; holds sysinfo's process table between reads.
pub struct Ledger {
    sys: System,
    /// Each process's CPU time at the last snapshot: a process that ran
    /// since then has its name read again (see [`Ledger::snapshot`]).
    last_cpu: HashMap<u32, u64>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new()
    }
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger {
            sys: System::new(),
            last_cpu: HashMap::new(),
        }
    }

    /// Every process's CPU time now (threads are not listed apart: their
    /// time is in their process's).
    ///
    /// sysinfo names a process once, when it first sees it, and keeps that
    /// name while the process lives. A process first seen between its fork
    /// and its exec (a shell about to run a program) would keep its
    /// parent's name after the exec, and a disturbance would blame the
    /// wrong program. So every process seen before that used CPU since the
    /// last snapshot (the only ones a disturbance can name, and few) has its
    /// current name read again; one new to this snapshot was named just now,
    /// so the first snapshot reads no more than sysinfo does.
    pub fn snapshot(&mut self) -> Snapshot {
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing().with_cpu().without_tasks(),
        );
        let last = std::mem::take(&mut self.last_cpu);
        let processes: HashMap<u32, (String, Option<u32>, u64)> = self
            .sys
            .processes()
            .iter()
            .filter(|(_, p)| p.thread_kind().is_none())
            .map(|(pid, p)| {
                let pid = pid.as_u32();
                let cpu = p.accumulated_cpu_time();
                // A process new to this snapshot was named by sysinfo just now.
                let ran = last.get(&pid).is_some_and(|&before| before != cpu);
                let name = ran
                    .then(|| current_name(pid))
                    .flatten()
                    .unwrap_or_else(|| p.name().to_string_lossy().into_owned());
                (pid, (name, p.parent().map(Pid::as_u32), cpu))
            })
            .collect();
        self.last_cpu = processes
            .iter()
            .map(|(pid, (_, _, cpu))| (*pid, *cpu))
            .collect();
        Snapshot {
            at: Instant::now(),
            processes,
            ticks: CpuTicks::read(),
        }
    }
}

/// A process's name as the kernel has it now (the same 15-character
/// command name sysinfo reads from `/proc/PID/stat`), or `None` where there
/// is no `/proc` or the process has gone.
fn current_name(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let name = comm.trim_end_matches('\n');
    (!name.is_empty()).then(|| name.to_string())
}

/// One other program's share of the window, by name (several processes of
/// one name, such as a browser's, are summed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ProcessLoad {
    pub name: String,
    /// Cores it kept busy on average over the window (1.0 = one whole core).
    pub cpu_cores: f64,
}

/// What competed with a timed phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    pub wall_ms: f64,
    /// Cores that other processes kept busy on average.
    pub others_cpu_cores: f64,
    /// Share of all CPU time the hypervisor gave away (Linux only).
    pub steal_pct: Option<f64>,
    /// The busiest other programs, busiest first.
    pub top: Vec<ProcessLoad>,
}

/// Programs below this share of a core are left out of the list (a
/// terminal redrawing, a daemon waking): they are noise, not a cause.
const LISTED_CORES: f64 = 0.02;

/// How many programs a disturbance names.
const TOP_N: usize = 5;

/// How the process that hosts a measurement (the CLI, or the app) is named
/// among the others: its work beside the worker (telemetry, storage, a sync,
/// a download, drawing the UI) competes with the test like anyone else's.
pub const HOST_SUFFIX: &str = " (this Dyno, besides measuring)";

/// What other processes used between `a` and `b`, leaving out the measuring
/// processes `measuring` and their children. `host`, the process that
/// started the measurement, is counted like any other, under its name with
/// [`HOST_SUFFIX`]: only the measuring worker's own time is the test's.
pub fn contention(a: &Snapshot, b: &Snapshot, measuring: &[u32], host: Option<u32>) -> Contention {
    let wall_ms = b.at.duration_since(a.at).as_secs_f64() * 1e3;
    let is_own = |pid: u32, parent: Option<u32>| {
        measuring.contains(&pid) || parent.is_some_and(|p| measuring.contains(&p))
    };
    let host_names: HashMap<u32, String> = host
        .and_then(|h| {
            b.processes
                .get(&h)
                .map(|(n, _, _)| (h, format!("{n}{HOST_SUFFIX}")))
        })
        .into_iter()
        .collect();
    let mut by_name: HashMap<&str, f64> = HashMap::new();
    let mut total_ms = 0.0;
    for (pid, (name, parent, ms)) in &b.processes {
        if is_own(*pid, *parent) {
            continue;
        }
        let shown = host_names.get(pid).unwrap_or(name);
        // A pid absent at the start began inside the window; one whose
        // counter went down is a reused pid: all its time is in the window.
        let before = a
            .processes
            .get(pid)
            .filter(|(n, _, m)| n == name && m <= ms)
            .map_or(0, |(_, _, m)| *m);
        let d = (ms - before) as f64;
        if d > 0.0 {
            total_ms += d;
            *by_name.entry(shown.as_str()).or_default() += d;
        }
    }
    let per_core = |ms: f64| if wall_ms > 0.0 { ms / wall_ms } else { 0.0 };
    let mut top: Vec<ProcessLoad> = by_name
        .into_iter()
        .map(|(name, ms)| ProcessLoad {
            name: name.to_string(),
            cpu_cores: per_core(ms),
        })
        .filter(|p| p.cpu_cores >= LISTED_CORES)
        .collect();
    top.sort_by(|x, y| {
        y.cpu_cores
            .total_cmp(&x.cpu_cores)
            .then(x.name.cmp(&y.name))
    });
    top.truncate(TOP_N);
    let steal_pct = match (a.ticks, b.ticks) {
        (Some(x), Some(y)) if y.total > x.total && y.steal >= x.steal => {
            Some((y.steal - x.steal) as f64 / (y.total - x.total) as f64 * 100.0)
        }
        _ => None,
    };
    Contention {
        wall_ms,
        others_cpu_cores: per_core(total_ms),
        steal_pct,
        top,
    }
}

/// When a result is called disturbed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Other processes' CPU as a share of the cores the test used.
    pub others_share: f64,
    /// Steal time, percent of all CPU time.
    pub steal_pct: f64,
    /// Coefficient of variation of the repetitions (stddev ÷ mean).
    pub cv: f64,
}

impl Default for Thresholds {
    /// A tenth of the cores in use lost to others moves a CPU-bound figure
    /// by about that much, past the 3% at which Dyno and llama-bench are
    /// held to agree. 5% steal is where cloud guidance calls a guest
    /// starved. Quiet runs here spread by 0.5–4% (see docs/method.md), so
    /// a spread of 10% is not the machine's ordinary noise.
    fn default() -> Self {
        Thresholds {
            others_share: 0.10,
            steal_pct: 5.0,
            cv: 0.10,
        }
    }
}

/// A result's verdict: kept with the result, shown wherever it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Disturbance {
    pub disturbed: bool,
    /// One sentence per reason, empty when not disturbed.
    pub reasons: Vec<String>,
    /// Cores other processes kept busy during the timed repetitions; null
    /// when the processes were not read.
    pub others_cpu_cores: Option<f64>,
    /// Cores the test used (its threads, at most the machine's).
    pub cores_in_use: u32,
    pub steal_pct: Option<f64>,
    /// Coefficient of variation of the repetitions' headline rate.
    pub cv: Option<f64>,
    /// The busiest other programs during the timed repetitions.
    pub processes: Vec<ProcessLoad>,
}

/// Judge one result from what competed with it and how its repetitions
/// spread. `None` when there is nothing to judge by.
pub fn judge(
    contention: Option<&Contention>,
    cores_in_use: u32,
    spare_cores: u32,
    cv: Option<f64>,
    th: &Thresholds,
) -> Option<Disturbance> {
    if contention.is_none() && cv.is_none() {
        return None;
    }
    let cores = cores_in_use.max(1);
    let mut reasons = Vec::new();
    if let Some(c) = contention {
        // Others' work fits first on the cores the test leaves idle (`-t 1`
        // on sixteen cores leaves fifteen); only what spills onto the
        // test's own cores takes time from it.
        let spill = (c.others_cpu_cores - f64::from(spare_cores)).max(0.0);
        let share = spill / f64::from(cores);
        if share > th.others_share {
            let names: Vec<String> = c
                .top
                .iter()
                .map(|p| format!("{} {:.2}", p.name, p.cpu_cores))
                .collect();
            let spare = if spare_cores > 0 {
                format!(" beyond the {spare_cores} idle")
            } else {
                String::new()
            };
            reasons.push(format!(
                "other processes used {:.0}% of the {cores} core{} in use ({:.2} cores{spare}{})",
                share * 100.0,
                if cores == 1 { "" } else { "s" },
                c.others_cpu_cores,
                if names.is_empty() {
                    String::new()
                } else {
                    format!(": {}", names.join(", "))
                }
            ));
        }
        if let Some(s) = c.steal_pct.filter(|s| *s > th.steal_pct) {
            reasons.push(format!(
                "the hypervisor took {s:.1}% of CPU time (steal) for other guests"
            ));
        }
    }
    if let Some(v) = cv.filter(|v| *v > th.cv) {
        reasons.push(format!(
            "the repetitions spread by {:.1}% (coefficient of variation), more than the {:.0}% of a quiet machine",
            v * 100.0,
            th.cv * 100.0
        ));
    }
    Some(Disturbance {
        disturbed: !reasons.is_empty(),
        reasons,
        others_cpu_cores: contention.map(|c| c.others_cpu_cores),
        cores_in_use: cores,
        steal_pct: contention.and_then(|c| c.steal_pct),
        cv,
        processes: contention.map(|c| c.top.clone()).unwrap_or_default(),
    })
}

/// The coefficient of variation of `samples`, from three on (fewer say
/// nothing about spread).
pub fn coefficient_of_variation(samples: &[f64]) -> Option<f64> {
    if samples.len() < 3 {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean > 0.0).then(|| var.sqrt() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn snap(at: Instant, procs: &[(u32, &str, Option<u32>, u64)], t: Option<CpuTicks>) -> Snapshot {
        Snapshot::from_parts(
            at,
            procs
                .iter()
                .map(|(p, n, par, ms)| (*p, n.to_string(), *par, *ms)),
            t,
        )
    }

    #[test]
    fn steal_comes_from_the_aggregate_line() {
        let stat = "cpu  100 5 50 800 10 0 5 30 0 0\ncpu0 50 2 25 400 5 0 2 15 0 0\nintr 1\n";
        assert_eq!(
            CpuTicks::parse(stat),
            Some(CpuTicks {
                steal: 30,
                total: 1000
            })
        );
        assert_eq!(CpuTicks::parse("cpu  1 2 3 4\n"), None, "no steal column");
        assert_eq!(CpuTicks::parse("intr 1\n"), None);
    }

    #[test]
    fn others_are_counted_and_the_measuring_worker_and_its_children_are_not() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        let a = snap(
            t0,
            &[
                (10, "dyno", None, 1_000),
                (11, "dyno", Some(10), 5_000),
                (20, "stress", None, 100),
                (21, "stress", None, 100),
                (30, "sshd", None, 50),
                (40, "old", None, 9_000),
            ],
            Some(CpuTicks {
                steal: 0,
                total: 1000,
            }),
        );
        let b = snap(
            t1,
            &[
                (10, "dyno", None, 1_500),
                (11, "dyno", Some(10), 9_000),
                (12, "dyno-quantize", Some(10), 800),
                (13, "helper", Some(11), 300),
                (20, "stress", None, 1_100),
                (21, "stress", None, 900),
                (30, "sshd", None, 52),
                (40, "new", None, 400),  // the pid was reused
                (50, "make", None, 200), // started inside the window
            ],
            Some(CpuTicks {
                steal: 40,
                total: 1400,
            }),
        );
        // 11 measures; 10 started it and counts, as does its other child.
        let c = contention(&a, &b, &[11], Some(10));
        assert!((c.wall_ms - 2000.0).abs() < 1e-6);
        // stress 1.8 s + quantize 0.8 + host 0.5 + new 0.4 + make 0.2 + sshd
        // 2 ms over 2 s; the worker's 4 s and its child's 0.3 s are the test's.
        assert!((c.others_cpu_cores - 3.702 / 2.0).abs() < 1e-9, "{c:?}");
        let names: Vec<&str> = c.top.iter().map(|p| p.name.as_str()).collect();
        let host = format!("dyno{HOST_SUFFIX}");
        assert_eq!(
            names,
            ["stress", "dyno-quantize", host.as_str(), "new", "make"],
            "sshd is below the listing floor"
        );
        assert!((c.top[0].cpu_cores - 0.9).abs() < 1e-9);
        assert!((c.top[2].cpu_cores - 0.25).abs() < 1e-9);
        assert_eq!(c.steal_pct, Some(10.0));
    }

    #[test]
    fn judging_names_each_reason_and_a_quiet_run_has_none() {
        let th = Thresholds::default();
        let busy = Contention {
            wall_ms: 1000.0,
            others_cpu_cores: 0.9,
            steal_pct: Some(8.0),
            top: vec![ProcessLoad {
                name: "stress-ng".into(),
                cpu_cores: 0.9,
            }],
        };
        let d = judge(Some(&busy), 2, 0, Some(0.2), &th).unwrap();
        assert!(d.disturbed);
        assert_eq!(d.reasons.len(), 3, "{:?}", d.reasons);
        assert!(d.reasons[0].contains("45% of the 2 cores"));
        assert!(d.reasons[0].contains("stress-ng 0.90"));
        assert!(d.reasons[1].contains("steal"));
        assert!(d.reasons[2].contains("20.0%"));

        let quiet = Contention {
            wall_ms: 1000.0,
            others_cpu_cores: 0.05,
            steal_pct: Some(0.0),
            top: vec![],
        };
        let d = judge(Some(&quiet), 2, 0, Some(0.01), &th).unwrap();
        assert!(!d.disturbed && d.reasons.is_empty());
        assert_eq!(d.others_cpu_cores, Some(0.05));

        // The same load is a larger share of one core than of eight.
        assert!(judge(Some(&quiet), 0, 0, None, &th).is_some_and(|d| !d.disturbed));
        let one = Contention {
            others_cpu_cores: 0.15,
            ..quiet.clone()
        };
        assert!(judge(Some(&one), 1, 0, None, &th).unwrap().disturbed);
        assert!(!judge(Some(&one), 8, 0, None, &th).unwrap().disturbed);
        assert_eq!(judge(None, 2, 0, None, &th), None, "nothing to judge by");
        // `-t 1` on sixteen cores: a daemon's 0.15 cores runs on the fifteen
        // the test left idle, and takes nothing from it.
        assert!(!judge(Some(&one), 1, 15, None, &th).unwrap().disturbed);
        // Sixteen cores' worth of others spills onto the test's one.
        let flood = Contention {
            others_cpu_cores: 15.5,
            ..quiet.clone()
        };
        let d = judge(Some(&flood), 1, 15, None, &th).unwrap();
        assert!(
            d.disturbed && d.reasons[0].contains("beyond the 15 idle"),
            "{:?}",
            d.reasons
        );
    }

    #[test]
    fn spread_needs_three_repetitions() {
        assert_eq!(coefficient_of_variation(&[1.0, 2.0]), None);
        let cv = coefficient_of_variation(&[9.0, 10.0, 11.0]).unwrap();
        assert!((cv - 0.1).abs() < 1e-12);
    }

    #[cfg(unix)]
    #[test]
    fn a_real_snapshot_sees_a_busy_child_of_another_process() {
        // A real process outside Dyno's own set burns CPU; the ledger must
        // see it by name.
        let mut ledger = Ledger::new();
        let a = ledger.snapshot();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"])
            .spawn()
            .expect("sh runs");
        std::thread::sleep(Duration::from_millis(400));
        let b = ledger.snapshot();
        let _ = child.kill();
        let _ = child.wait();
        // The shell is this test's child, which Dyno would count as its
        // own; here no process is Dyno's.
        let c = contention(&a, &b, &[], None);
        // The shell's own share, not everyone's: on a busy machine the
        // total passes 0.3 cores with or without it.
        let sh = c.top.iter().find(|p| p.name == "sh");
        assert!(
            sh.is_some_and(|p| p.cpu_cores > 0.3),
            "a busy shell was running: {c:?}"
        );
        assert!(c.others_cpu_cores >= sh.unwrap().cpu_cores, "{c:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_seen_before_its_exec_is_named_by_the_program_it_became() {
        // A shell is seen while it waits, then execs a busy program under
        // another name with the same pid: the disturbance must name the
        // program, not the shell sysinfo first saw.
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("dyno-exec-hog");
        std::fs::copy("/bin/sh", &exe).unwrap();
        let script = format!(
            "read _; exec '{}' -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done'",
            exe.display()
        );
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("sh runs");
        let pid = child.id();
        let mut ledger = Ledger::new();
        // Seen as the shell, before the exec.
        let before = loop {
            let s = ledger.snapshot();
            if s.processes.get(&pid).is_some_and(|(n, _, _)| n == "sh") {
                break s;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(b"go\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(400));
        let after = ledger.snapshot();
        let _ = child.kill();
        let _ = child.wait();
        let c = contention(&before, &after, &[], None);
        assert!(
            c.top.iter().any(|p| p.name == "dyno-exec-hog"),
            "the busy program is named as it is now: {c:?}"
        );
    }
}
