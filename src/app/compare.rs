//! Two results side by side (`dyno compare A B` and the app's Compare view):
//! both sides are loaded from the store and matched test by test, or level by
//! level when both are sweeps, with the same significance test either way.

use std::path::Path;

use crate::error::{DynoError, Result};
use crate::report::compare::Comparison;
use crate::report::{self, Target};
use crate::store::Store;

/// Compare targets `a` and `b` ("12", "run:12", "sweep:3", or two server
/// runs "serve:2"); `db` names the
/// database in a "not found" message.
pub async fn compare(store: &Store, db: &Path, a: &str, b: &str) -> Result<Comparison> {
    let (ta, tb): (Target, Target) = (a.parse()?, b.parse()?);
    match (ta, tb) {
        (Target::Server(x), Target::Server(y)) => {
            // The model path a server reports is cut to its file name, as
            // in exports: a comparison is made to be shared.
            let load = |id| async move {
                let r = crate::serve::report::load(store, id, false).await?;
                Ok::<_, DynoError>(report::export::serve::scrubbed(r, false))
            };
            let (ra, rb) = (load(x).await?, load(y).await?);
            return Ok(report::compare::compare_servers(a, &ra, b, &rb));
        }
        (Target::Server(_), _) | (_, Target::Server(_)) => {
            return Err(DynoError::BadInput(format!(
                "{a} and {b}: a server run compares with another server run (serve:ID); to compare a server with the engine underneath it, run `dyno serve-bench URL --engine MODEL.gguf`"
            )));
        }
        _ => {}
    }
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
