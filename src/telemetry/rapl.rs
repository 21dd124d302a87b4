//! CPU package energy from Linux RAPL (`/sys/class/powercap/intel-rapl:N`,
//! also used by AMD's driver). Often readable only by root since 2020
//! (a side-channel fix), so a missing or unreadable counter is normal and
//! gives `None`.

use std::path::{Path, PathBuf};

use super::summary::counter_delta;

/// The package domains and a running total that does not wrap: each
/// package's counter wraps at its own range, so deltas are taken per package
/// and summed.
pub struct Rapl {
    packages: Vec<Package>,
    total_uj: u64,
}

struct Package {
    energy: PathBuf,
    range: Option<u64>,
    last: u64,
}

fn read_u64(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

impl Rapl {
    /// Open every readable package domain under `root` (normally
    /// `/sys/class/powercap`); `None` when there is none.
    pub fn open(root: &Path) -> Option<Rapl> {
        let mut packages = Vec::new();
        for e in std::fs::read_dir(root).ok()?.flatten() {
            let dir = e.path();
            let name = std::fs::read_to_string(dir.join("name")).unwrap_or_default();
            if !name.trim().starts_with("package") {
                continue;
            }
            let energy = dir.join("energy_uj");
            if let Some(last) = read_u64(&energy) {
                packages.push(Package {
                    range: read_u64(&dir.join("max_energy_range_uj")),
                    energy,
                    last,
                });
            }
        }
        (!packages.is_empty()).then_some(Rapl {
            packages,
            total_uj: 0,
        })
    }

    /// The cumulative package energy in µJ since `open`.
    pub fn read(&mut self) -> u64 {
        for p in &mut self.packages {
            if let Some(cur) = read_u64(&p.energy) {
                self.total_uj += counter_delta(p.last, cur, p.range).unwrap_or(0);
                p.last = cur;
            }
        }
        self.total_uj
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_package_domains_and_survives_a_wrap() {
        let root = tempfile::tempdir().unwrap();
        let pkg = root.path().join("intel-rapl:0");
        let core = root.path().join("intel-rapl:0:0");
        for (d, name) in [(&pkg, "package-0"), (&core, "core")] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("max_energy_range_uj"), "1000\n").unwrap();
            std::fs::write(d.join("energy_uj"), "900\n").unwrap();
        }
        let mut r = Rapl::open(root.path()).unwrap();
        assert_eq!(r.packages.len(), 1, "only package domains count");
        std::fs::write(pkg.join("energy_uj"), "950\n").unwrap();
        assert_eq!(r.read(), 50);
        std::fs::write(pkg.join("energy_uj"), "20\n").unwrap(); // wrapped at 1000
        assert_eq!(r.read(), 120);
    }

    #[test]
    fn no_powercap_is_none() {
        let root = tempfile::tempdir().unwrap();
        assert!(Rapl::open(&root.path().join("missing")).is_none());
        assert!(Rapl::open(root.path()).is_none());
    }
}
