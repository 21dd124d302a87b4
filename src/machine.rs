//! The machine a result was measured on. A figure means nothing without it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// Stable id of this machine (hash of the OS machine id, CPU and RAM);
    /// reveals neither host name nor user.
    pub fingerprint: String,
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu: String,
    pub cores_physical: Option<usize>,
    pub cores_logical: usize,
    pub memory_bytes: u64,
}

impl Machine {
    pub fn detect() -> Machine {
        let sys = System::new_with_specifics(
            RefreshKind::nothing()
                .with_cpu(CpuRefreshKind::nothing())
                .with_memory(MemoryRefreshKind::nothing().with_ram()),
        );
        let cpu = sys
            .cpus()
            .first()
            .map(|c| c.brand().trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let cores_logical = sys.cpus().len().max(1);
        let cores_physical = System::physical_core_count();
        let memory_bytes = sys.total_memory();
        let id = std::fs::read_to_string("/etc/machine-id")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .or_else(System::host_name)
            .unwrap_or_default();
        let mut h = Sha256::new();
        h.update(format!("{id}|{cpu}|{cores_logical}|{memory_bytes}"));
        let fingerprint = machine_id_override().unwrap_or_else(|| {
            h.finalize()
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect()
        });
        Machine {
            fingerprint,
            hostname: System::host_name(),
            os: System::long_os_version(),
            kernel: System::kernel_version(),
            cpu,
            cores_physical,
            cores_logical,
            memory_bytes,
        }
    }

    /// Threads llama-bench would use by default: one per physical core.
    pub fn default_threads(&self) -> u32 {
        self.cores_physical.unwrap_or(self.cores_logical).max(1) as u32
    }
}

/// `DYNO_MACHINE_ID`, when set: the identity this machine's runs carry
/// instead of the hash of its hardware. Containers on one host share the
/// hash, and tests play several machines from one; both set it. Kept to
/// 64 printable characters, since it names the machine in the team store.
pub fn machine_id_override() -> Option<String> {
    let v = std::env::var("DYNO_MACHINE_ID").ok()?;
    let v: String = v
        .trim()
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect();
    (!v.is_empty()).then_some(v)
}
