//! The parsers of the plan options both front ends take as text: GPU
//! layers, devices, expert layers, tensor overrides, RPC servers and
//! sustained minutes. The CLI's flags (`cli::options`) call them one item
//! at a time; the app's forms give the same syntax as one comma-separated
//! string ([`ngl_list`] and its kin). So a value is refused with the same
//! words in both, and the syntax is llama-bench's where it has one.

use crate::vocab::TensorOverride;

/// One `--ngl` item: "auto", a layer count, or a range in llama-bench's
/// syntax ("0-32" every layer count, "0-32+8" in steps of 8, "1-64*2"
/// doubling), so `--ngl 0-32+8` is an offload sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct NglItem(pub Vec<Option<u32>>);

pub fn parse_ngl(s: &str) -> Result<NglItem, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("auto") {
        return Ok(NglItem(vec![None]));
    }
    let err =
        || format!("'{s}' is not a layer count; use a number, 'auto', or a range such as 0-32+8");
    let num = |v: &str| v.trim().parse::<u32>().map_err(|_| err());
    let Some((first, rest)) = s.split_once('-') else {
        return Ok(NglItem(vec![Some(num(s)?)]));
    };
    let first = num(first)?;
    let (last, step): (u32, Box<dyn Fn(u32) -> u32>) = if let Some((l, k)) = rest.split_once('+') {
        let k = num(k)?;
        if k == 0 {
            return Err(format!("'{s}': the step must be at least 1"));
        }
        (num(l)?, Box::new(move |v| v.saturating_add(k)))
    } else if let Some((l, k)) = rest.split_once('*') {
        let k = num(k)?;
        if k < 2 || first == 0 {
            return Err(format!(
                "'{s}': a '*' range needs a first value of at least 1 and a factor of at least 2"
            ));
        }
        (num(l)?, Box::new(move |v| v.saturating_mul(k)))
    } else {
        (num(rest)?, Box::new(|v| v.saturating_add(1)))
    };
    if last < first {
        return Err(format!("'{s}': the range ends before it starts"));
    }
    let mut out = Vec::new();
    let mut v = first;
    while v <= last {
        if out.len() == 256 {
            return Err(format!(
                "'{s}' makes more than 256 layer counts; use a larger step"
            ));
        }
        out.push(Some(v));
        let next = step(v);
        if next == v {
            break;
        }
        v = next;
    }
    Ok(NglItem(out))
}

/// A `--device` item: "auto" (every device llama.cpp sees), "none" (CPU
/// only) or device names joined by '/', as llama-bench's `-dev`.
pub fn parse_devices(s: &str) -> Result<Option<Vec<String>>, String> {
    match s.trim() {
        "auto" => Ok(None),
        "none" => Ok(Some(Vec::new())),
        "" => Err("an empty device name; use names from `dyno hw`, 'auto' or 'none'".into()),
        v => {
            let names: Vec<String> = v.split('/').map(|d| d.trim().to_string()).collect();
            if names.iter().any(String::is_empty) {
                return Err(format!(
                    "'{v}' has an empty device name; join names from `dyno hw` with '/'"
                ));
            }
            Ok(Some(names))
        }
    }
}

/// One `--n-cpu-moe` item: a layer count or a range, as `--ngl` takes them.
#[derive(Debug, Clone, PartialEq)]
pub struct CountItem(pub Vec<u32>);

pub fn parse_count(s: &str) -> Result<CountItem, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Err(
            "'auto' is not a layer count here; use a number or a range such as 0-32+8".into(),
        );
    }
    Ok(CountItem(parse_ngl(s)?.0.into_iter().flatten().collect()))
}

/// One `--override-tensor` group: `PATTERN=BUFFER` entries joined by ';'
/// (llama-bench's `-ot` syntax); ',' separates groups to sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideGroup(pub Vec<TensorOverride>);

pub fn parse_override_group(s: &str) -> Result<OverrideGroup, String> {
    TensorOverride::parse_group(s).map(OverrideGroup)
}

pub fn parse_bool01(s: &str) -> Result<bool, String> {
    match s {
        "1" | "true" | "on" => Ok(true),
        "0" | "false" | "off" => Ok(false),
        _ => Err(format!("'{s}' is not 0 or 1")),
    }
}

/// Parse a `--pg` pair "P,N".
pub fn parse_pg(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("'{s}' is not a pair; write --pg PROMPT,GEN, e.g. --pg 512,128");
    let (p, n) = s.split_once(',').ok_or_else(err)?;
    Ok((
        p.trim().parse().map_err(|_| err())?,
        n.trim().parse().map_err(|_| err())?,
    ))
}

/// `--sustain` minutes, fractions allowed (0.5 is 30 s), as whole seconds.
pub fn parse_minutes(s: &str) -> Result<u32, String> {
    let m: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of minutes; e.g. --sustain 5"))?;
    sustain_seconds(m)
}

pub fn parse_mmap(s: &str) -> Result<Option<bool>, String> {
    match s {
        "1" | "true" | "on" => Ok(Some(true)),
        "0" | "false" | "off" => Ok(Some(false)),
        "auto" => Ok(None),
        _ => Err(format!("'{s}' is not 0, 1 or auto")),
    }
}

/// The items of a comma-separated list, each parsed by `parse`; blanks
/// between commas are skipped, and a list of none is `None`.
fn list<T>(s: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Option<Vec<T>>, String> {
    let items = s
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(parse)
        .collect::<Result<Vec<T>, String>>()?;
    Ok((!items.is_empty()).then_some(items))
}

/// `--ngl` items as one list of layer counts, each once, in the order given
/// (`0-32+8,32` is 0, 8, 16, 24, 32).
pub fn merge_ngl(items: &[NglItem]) -> Vec<Option<u32>> {
    let mut out: Vec<Option<u32>> = Vec::new();
    for n in items.iter().flat_map(|i| i.0.iter().copied()) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// GPU layers as a form gives them, "0-16+8,99"; `None` when blank.
pub fn ngl_list(s: &str) -> Result<Option<Vec<Option<u32>>>, String> {
    Ok(list(s, parse_ngl)?.map(|items| merge_ngl(&items)))
}

/// Expert layers kept on the CPU as a form gives them, "0,8,16".
pub fn count_list(s: &str) -> Result<Option<Vec<u32>>, String> {
    Ok(list(s, parse_count)?.map(|items| items.into_iter().flat_map(|i| i.0).collect()))
}

/// Tensor override settings as a form gives them: groups of
/// `PATTERN=BUFFER;…` separated by ','.
pub fn override_list(s: &str) -> Result<Option<Vec<Vec<TensorOverride>>>, String> {
    Ok(list(s, parse_override_group)?.map(|groups| groups.into_iter().map(|g| g.0).collect()))
}

/// RPC servers, HOST:PORT separated by ','; each is checked when the plan is
/// validated, as the CLI's are.
pub fn rpc_list(s: &str) -> Vec<String> {
    list(s, |e| Ok(e.to_string()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A sustained decode of `m` minutes (fractions allowed), as whole seconds.
pub fn sustain_seconds(m: f64) -> Result<u32, String> {
    if !(m.is_finite() && m > 0.0) {
        return Err(format!("'{m}': give a number of minutes above 0"));
    }
    let secs = (m * 60.0).round();
    if secs < 1.0 || secs > f64::from(crate::bench::plan::SUSTAIN_MAX_S) {
        return Err(format!(
            "'{m}': a sustained decode lasts from 1 second to {} minutes",
            crate::bench::plan::SUSTAIN_MAX_S / 60
        ));
    }
    Ok(secs as u32)
}
