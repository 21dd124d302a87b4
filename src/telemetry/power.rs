//! Where the machine's power came from while it measured, and how it was
//! told to spend it. A laptop on battery, or with its governor on
//! `powersave`, decodes slower than the same laptop on AC with
//! `performance`, and the figure alone cannot say which it was.
//!
//! Read from Linux sysfs (`class/power_supply`, cpufreq's
//! `scaling_governor`, ACPI's `platform_profile`) under a root that tests
//! point at a fake tree. Every field is optional: a desktop or a VM lists no
//! power supply, many VMs expose no cpufreq. macOS Low Power Mode and the
//! Windows power plan are not read yet.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Mains or battery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum PowerSource {
    Ac,
    Battery,
}

/// The power conditions of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PowerState {
    /// Null when the machine lists no power supply (most desktops and VMs).
    pub source: Option<PowerSource>,
    /// The system battery's charge, 0–100.
    pub battery_pct: Option<u8>,
    /// The CPU frequency governor most cores use (`performance`,
    /// `powersave`, `schedutil`, …).
    pub governor: Option<String>,
    /// The platform power profile (`low-power`, `balanced`,
    /// `performance`).
    pub platform_profile: Option<String>,
}

impl PowerState {
    /// This machine's state now.
    pub fn now() -> PowerState {
        PowerState::read(Path::new("/sys"))
    }

    /// Read under a sysfs root (`/sys`).
    pub fn read(sys: &Path) -> PowerState {
        let (source, battery_pct) = supply(&sys.join("class/power_supply"));
        PowerState {
            source,
            battery_pct,
            governor: governor(&sys.join("devices/system/cpu")),
            platform_profile: text(&sys.join("firmware/acpi/platform_profile")),
        }
    }

    /// True when nothing was readable.
    pub fn is_empty(&self) -> bool {
        *self == PowerState::default()
    }

    /// One line for tables and cards: "battery 54% · governor powersave".
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        match (self.source, self.battery_pct) {
            (Some(PowerSource::Battery), Some(p)) => parts.push(format!("on battery ({p}%)")),
            (Some(PowerSource::Battery), None) => parts.push("on battery".into()),
            (Some(PowerSource::Ac), _) => parts.push("on AC".into()),
            (None, _) => {}
        }
        if let Some(g) = &self.governor {
            parts.push(format!("governor {g}"));
        }
        if let Some(p) = &self.platform_profile {
            parts.push(format!("profile {p}"));
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

fn text(p: &Path) -> Option<String> {
    let s = std::fs::read_to_string(p).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// AC or battery, and the system battery's charge. A supply with `scope`
/// `Device` (a wireless mouse's battery) is not the machine's.
fn supply(dir: &Path) -> (Option<PowerSource>, Option<u8>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (None, None);
    };
    let mut mains_online = None::<bool>;
    let mut battery: Option<(Option<u8>, Option<String>)> = None;
    let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        if text(&p.join("scope")).as_deref() == Some("Device") {
            continue;
        }
        match text(&p.join("type")).as_deref() {
            Some("Mains" | "USB" | "USB_C" | "USB_PD" | "Wireless") => {
                let online = text(&p.join("online")).as_deref() == Some("1");
                mains_online = Some(mains_online.unwrap_or(false) || online);
            }
            Some("Battery") if battery.is_none() => {
                let pct = text(&p.join("capacity"))
                    .and_then(|c| c.parse::<u8>().ok())
                    .map(|c| c.min(100));
                battery = Some((pct, text(&p.join("status"))));
            }
            _ => {}
        }
    }
    let pct = battery.as_ref().and_then(|b| b.0);
    let discharging = battery
        .as_ref()
        .and_then(|b| b.1.as_deref())
        .is_some_and(|s| s == "Discharging");
    let source = match (mains_online, battery.is_some()) {
        (Some(true), _) => Some(PowerSource::Ac),
        (_, true) if discharging || mains_online == Some(false) => Some(PowerSource::Battery),
        (Some(false), false) => None,
        (None, true) => Some(PowerSource::Ac),
        _ => None,
    };
    (source, pct)
}

/// The governor most cores use; ties go to the name that sorts first.
fn governor(cpu: &Path) -> Option<String> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for e in std::fs::read_dir(cpu).ok()?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with("cpu") || !name[3..].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Some(g) = text(&e.path().join("cpufreq/scaling_governor")) {
            *count.entry(g).or_default() += 1;
        }
    }
    let best = count.values().copied().max()?;
    count.into_iter().find(|(_, n)| *n == best).map(|(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, v: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    }

    #[test]
    fn a_laptop_on_battery_with_powersave() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(r, "class/power_supply/AC/type", "Mains");
        write(r, "class/power_supply/AC/online", "0");
        write(r, "class/power_supply/BAT0/type", "Battery");
        write(r, "class/power_supply/BAT0/capacity", "54");
        write(r, "class/power_supply/BAT0/status", "Discharging");
        // A wireless mouse's battery is not the machine's.
        write(r, "class/power_supply/hidpp_battery_0/type", "Battery");
        write(r, "class/power_supply/hidpp_battery_0/scope", "Device");
        write(r, "class/power_supply/hidpp_battery_0/capacity", "5");
        for (i, g) in ["powersave", "powersave", "performance"].iter().enumerate() {
            write(
                r,
                &format!("devices/system/cpu/cpu{i}/cpufreq/scaling_governor"),
                g,
            );
        }
        write(
            r,
            "devices/system/cpu/cpufreq/policy0/scaling_governor",
            "schedutil",
        );
        write(r, "firmware/acpi/platform_profile", "low-power");
        let s = PowerState::read(r);
        assert_eq!(s.source, Some(PowerSource::Battery));
        assert_eq!(s.battery_pct, Some(54));
        assert_eq!(s.governor.as_deref(), Some("powersave"));
        assert_eq!(s.platform_profile.as_deref(), Some("low-power"));
        assert_eq!(
            s.describe().unwrap(),
            "on battery (54%) · governor powersave · profile low-power"
        );
    }

    #[test]
    fn a_laptop_charging_on_usb_c_is_on_ac() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        write(
            r,
            "class/power_supply/ucsi-source-psy-USBC000:001/type",
            "USB",
        );
        write(
            r,
            "class/power_supply/ucsi-source-psy-USBC000:001/online",
            "1",
        );
        write(r, "class/power_supply/BAT1/type", "Battery");
        write(r, "class/power_supply/BAT1/capacity", "80");
        write(r, "class/power_supply/BAT1/status", "Charging");
        let s = PowerState::read(r);
        assert_eq!((s.source, s.battery_pct), (Some(PowerSource::Ac), Some(80)));
        assert_eq!(s.governor, None);
    }

    #[test]
    fn a_desktop_or_vm_lists_nothing() {
        let d = tempfile::tempdir().unwrap();
        let s = PowerState::read(d.path());
        assert!(s.is_empty());
        assert_eq!(s.describe(), None);
        // A UPS-less desktop with only a mains entry reads as AC.
        write(d.path(), "class/power_supply/ACAD/type", "Mains");
        write(d.path(), "class/power_supply/ACAD/online", "1");
        assert_eq!(PowerState::read(d.path()).source, Some(PowerSource::Ac));
    }
}
