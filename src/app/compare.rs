//! Two results side by side (`dyno compare A B` and the app's Compare view):
//! both sides are loaded from the store and matched test by test, or level by
//! level when both are sweeps, with the same significance test either way.

use std::path::Path;

use crate::error::Result;
use crate::report::compare::Comparison;
use crate::report::{self, Target};
use crate::store::Store;

/// Compare targets `a` and `b` ("12", "run:12", "sweep:3"); `db` names the
/// database in a "not found" message.
pub async fn compare(store: &Store, db: &Path, a: &str, b: &str) -> Result<Comparison> {
    let (ta, tb): (Target, Target) = (a.parse()?, b.parse()?);
    let la = report::load(store, db, ta).await?;
    let lb = report::load(store, db, tb).await?;
    // Sweeps match level by level; two runs match by test, whatever their quant.
    Ok(report::compare::compare(
        a,
        la.report(),
        b,
        lb.report(),
        ta.is_sweep() && tb.is_sweep(),
    ))
}
