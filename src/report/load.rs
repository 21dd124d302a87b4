//! Loading what a target (`12`, `sweep:3`, `serve:2`) names: a run's
//! document ([`super::build`]) or a sweep's ([`super::sweep`]). Apart from
//! both, so the sweep's report can build on the run document without the
//! two importing each other.

use super::{build, offload, sweep, Loaded, Target};
use crate::error::Result;
use crate::machine::Machine;
use crate::store::Store;

/// Build the report `t` points at from the store.
pub async fn load(store: &Store, db: &std::path::Path, t: Target) -> Result<Loaded> {
    let here = Machine::detect();
    match t {
        Target::Server(n) => Err(crate::error::DynoError::BadInput(format!(
            "serve:{n} is a server run: `dyno serve-show {n}` shows it, `dyno export serve:{n}` exports it \
             and `dyno compare serve:{n} serve:M` compares it with another server run"
        ))),
        Target::Sweep(n) => Ok(Loaded::Sweep(sweep::build(store, n, &here).await?)),
        Target::Run(n) => {
            let row = store.run(n).await?.ok_or_else(|| {
                crate::error::DynoError::NotFound(format!(
                    "no run {n} in {}; `dyno runs` lists the stored runs",
                    db.display()
                ))
            })?;
            let mut report = build::build(store, std::slice::from_ref(&row), &here).await?;
            // A run from a `dyno bench` offload sweep shows its curve.
            if let Some(sweep_id) = row.sweep_id {
                let siblings = store.sweep_runs(sweep_id).await?;
                if siblings.len() > 1 {
                    let mut runs = Vec::with_capacity(siblings.len());
                    for r in &siblings {
                        runs.push(build::run_json(store, r).await?);
                    }
                    report.offload_sweep = offload::series(&runs)
                        .into_iter()
                        .filter(|s| s.points.iter().any(|p| p.run_id == n))
                        .collect();
                }
            }
            Ok(Loaded::Run(report))
        }
    }
}
