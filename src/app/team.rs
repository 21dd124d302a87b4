//! The team store's use cases: `dyno sync` and the app's Sync button, reads
//! of a team store (`--db postgres://…`, the app's Team view), the machines
//! ranking and the team median on a result card.
//!
//! Sync pushes first, then pulls:
//! - Push walks this database's runs in id order from where the last push
//!   to that store stopped, 200 at a time. Each batch is one transaction on
//!   the server, and only after it commits does the local mark move on. A
//!   sync cut anywhere (server down, kill -9) loses nothing and the next one
//!   starts at the first batch not committed; the content-addressed uids
//!   make any batch sent twice a no-op.
//! - A run still being measured stops the walk there: it is pushed by the
//!   next sync, once it is finished.
//! - Pull fetches the runs of other machines that this database lacks and
//!   stores them as imported runs, marked with the store they came from, so
//!   the Results view, `show`, `compare` and exports see them offline and no
//!   push sends them back.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::report::team::{self as rt, Ranking};
use crate::report::{self, Report};
use crate::store::team::{self, Access, TeamFilter, TeamRunRow, TeamStore};
use crate::store::Store;
use crate::worker::client::Cancel;

/// The settings key of the team store's URL, saved without its password.
pub const TEAM_URL: &str = "team.url";

/// Runs per push transaction: big enough that a round trip is not the
/// cost, small enough that a cut loses seconds of work.
const BATCH: i64 = 200;

/// What to sync.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SyncRequest {
    /// The team store's URL (postgres://…); the password may be in it for
    /// this sync only.
    pub url: String,
    /// Also push each run's telemetry series (100 ms readings).
    #[serde(default)]
    pub with_telemetry: bool,
    /// Skip pulling other machines' runs.
    #[serde(default)]
    pub push_only: bool,
}

/// How a sync is going, for a progress bar.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum SyncProgress {
    Connected { store: String, schema_version: i64 },
    Pushing { done: u64, total: u64 },
    Pulling { done: u64, total: u64 },
}

/// What a sync did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SyncReport {
    /// The store's URL without its password.
    pub store: String,
    /// This machine's identity in the store.
    pub machine: String,
    /// Runs this sync added to the store.
    pub pushed: u64,
    /// Runs sent that the store already had (a resumed or repeated sync).
    pub already_there: u64,
    /// Telemetry series added.
    pub telemetry_pushed: u64,
    /// Other machines' runs stored here.
    pub pulled: u64,
    /// Runs still being measured, left for the next sync.
    pub left_running: u64,
    /// Other machines' runs this Dyno cannot read (pushed by a newer Dyno,
    /// with a test kind this one does not know, say): skipped so the rest
    /// of the pull goes on, and tried again by the next sync.
    pub skipped: u64,
    /// The first few skipped runs, each with why.
    pub skipped_runs: Vec<SkippedRun>,
    /// Runs and machines in the store after the sync.
    pub team_runs: i64,
    pub team_machines: u64,
    /// Bytes of documents pushed, and the time the push took.
    pub push_bytes: u64,
    pub push_seconds: f64,
    pub pull_seconds: f64,
    /// The password went to another machine over a connection that may fall
    /// back to plain text (see [`team::tls_warning`]), with what to do.
    pub tls_warning: Option<String>,
}

/// A team run a pull left out, and why.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SkippedRun {
    /// Its key in the team store.
    pub uid: String,
    pub reason: String,
}

/// How many skipped runs a report names; the rest are only counted.
const SKIPPED_NAMED: usize = 10;

/// Where a push's progress is kept: the store's host, port and database (or
/// file) without user or password, so a changed password or user name does
/// not start the push over.
fn store_key(url: &str) -> String {
    match url::Url::parse(url.trim()) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            let _ = u.set_username("");
            u.set_query(None);
            u.to_string()
        }
        Err(_) => team::redact(url),
    }
}

/// The team URL in force: `given`, else DYNO_TEAM_URL, else the saved
/// setting.
pub async fn team_url(store: &Store, given: Option<&str>) -> Result<String> {
    if let Some(u) = given.map(str::trim).filter(|u| !u.is_empty()) {
        return Ok(u.to_string());
    }
    if let Ok(u) = std::env::var("DYNO_TEAM_URL") {
        if !u.trim().is_empty() {
            return Ok(u.trim().to_string());
        }
    }
    store.setting(TEAM_URL).await?.ok_or_else(|| {
        DynoError::BadInput(
            "no team store set; give its URL (dyno sync postgres://USER@HOST/DB), set DYNO_TEAM_URL, or save one with `dyno settings set team.url URL`".into(),
        )
    })
}

/// Save the team URL, its password removed: Dyno never stores a password.
pub async fn save_team_url(store: &Store, url: &str) -> Result<String> {
    if !team::is_team_url(url) {
        return Err(DynoError::BadInput(format!(
            "{} is not a team store URL; write postgres://USER@HOST:PORT/DATABASE",
            team::redact(url)
        )));
    }
    let clean = team::without_password(url)?;
    store.set_setting(TEAM_URL, &clean).await?;
    Ok(clean)
}

/// Push this database's runs to the team store and pull the others'.
///
/// `cancel` is looked at between batches: a cancelled sync stops after the
/// batch the server has committed (its mark saved), skips what is left of
/// the push and the pull, and returns what it did. The next sync goes on
/// from there.
pub async fn sync(
    store: &Store,
    req: &SyncRequest,
    progress: &(dyn Fn(SyncProgress) + Send + Sync),
    cancel: &Cancel,
) -> Result<SyncReport> {
    // An empty URL is the one in force (DYNO_TEAM_URL, else the saved one),
    // its password from PGPASSWORD or ~/.pgpass.
    let url = team_url(store, Some(&req.url)).await?;
    let req = &SyncRequest { url, ..req.clone() };
    let team = TeamStore::connect(&req.url, Access::Write).await?;
    let out = sync_with(store, &team, req, progress, cancel).await;
    team.close().await;
    out.map(|r| SyncReport {
        tls_warning: team::tls_warning(&req.url),
        ..r
    })
}

async fn sync_with(
    store: &Store,
    team: &TeamStore,
    req: &SyncRequest,
    progress: &(dyn Fn(SyncProgress) + Send + Sync),
    cancel: &Cancel,
) -> Result<SyncReport> {
    let here = Machine::detect();
    let g = Guard::new(team, cancel);
    let Some(schema_version) = g.run(team.schema_version()).await? else {
        return Ok(SyncReport::empty(team.label(), &here.fingerprint));
    };
    progress(SyncProgress::Connected {
        store: team.label().to_string(),
        schema_version,
    });
    // The mark is the store's own: a database dropped and made again at the
    // same address starts from nothing, so every run is sent to it again.
    let mut rep = SyncReport::empty(team.label(), &here.fingerprint);
    let Some(id) = g.run(team.store_id()).await? else {
        return Ok(rep);
    };
    let key = match id {
        Some(id) => format!("{} #{id}", store_key(&req.url)),
        None => store_key(&req.url),
    };

    let t0 = Instant::now();
    push_runs(store, &g, &here, &key, req, progress, &mut rep).await?;
    rep.push_seconds = t0.elapsed().as_secs_f64();

    // Pull.
    let t1 = Instant::now();
    if !req.push_only && !cancel.is_cancelled() {
        pull(store, &g, &here, &key, progress, &mut rep).await?;
    }
    rep.pull_seconds = t1.elapsed().as_secs_f64();
    if let Some(n) = g.run(team.count_runs()).await? {
        rep.team_runs = n;
    }
    if let Some(m) = g.run(team.machines()).await? {
        rep.team_machines = m.len() as u64;
    }
    Ok(rep)
}

/// Push this database's runs after the mark in batches, each committed on
/// the server before the mark moves past it, then the telemetry of runs an
/// earlier sync pushed without it. A run left 'running' by a process that
/// has since died would stop the push at it for good, so such runs are
/// closed first; only a run a live process is measuring holds the push back.
async fn push_runs(
    store: &Store,
    g: &Guard<'_>,
    here: &Machine,
    key: &str,
    req: &SyncRequest,
    progress: &(dyn Fn(SyncProgress) + Send + Sync),
    rep: &mut SyncReport,
) -> Result<()> {
    store.close_orphaned_runs().await?;
    let (mut through, telemetry_through) = store.sync_state(key).await?;
    let total = store.count_runs_to_push(through).await?.max(0) as u64;
    let mut done = 0u64;
    progress(SyncProgress::Pushing { done, total });
    'push: while !g.cancel.is_cancelled() {
        let rows = store.runs_after(through, BATCH).await?;
        if rows.is_empty() {
            break;
        }
        let marks: Vec<Mark> = rows.iter().map(Mark::of).collect();
        let plan = plan_batch(&marks, through);
        if let Some(id) = plan.blocked_at {
            rep.left_running = store.count_running_after(id - 1).await? as u64;
        }
        let mut batch = Vec::with_capacity(plan.push.len());
        for &i in &plan.push {
            batch.push(team_run(store, &rows[i], here, req.with_telemetry).await?);
        }
        let (last, stop) = (plan.through, plan.blocked_at.is_some());
        if !batch.is_empty() {
            // Cancelled mid-batch: the mark stays before it, so a batch the
            // server did commit is counted "already there" next time.
            let Some(p) = g.run(g.team.push(&batch)).await? else {
                break 'push;
            };
            rep.pushed += p.added as u64;
            rep.already_there += p.present as u64;
            rep.push_bytes += p.bytes;
            rep.telemetry_pushed += p.telemetry as u64;
            done += batch.len() as u64;
        }
        // Only now, with the batch committed on the server.
        let tel = req.with_telemetry.then_some(last);
        store.set_sync_state(key, last, tel).await?;
        through = last;
        progress(SyncProgress::Pushing {
            done,
            total: total.max(done),
        });
        if stop {
            break 'push;
        }
    }
    // Runs pushed by an earlier sync without their telemetry get it now.
    if req.with_telemetry && telemetry_through < through {
        let from = (telemetry_through, through);
        push_telemetry(store, g, here, key, from, rep).await?;
    }
    Ok(())
}

/// What the push planner needs of a local run: its id, whether a live
/// process is still measuring it, and whether it came from a team store.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark {
    id: i64,
    running: bool,
    pulled: bool,
}

impl Mark {
    fn of(row: &crate::store::RunRow) -> Mark {
        Mark {
            id: row.id,
            running: row.status == crate::vocab::status::RunStatus::Running,
            pulled: row.pulled_from.is_some(),
        }
    }
}

/// One push batch, decided from the runs after the mark alone (the plan
/// half of plan-then-execute, tested without a store or a server).
#[derive(Debug, PartialEq)]
struct BatchPlan {
    /// Indices of the runs to send.
    push: Vec<usize>,
    /// The mark once the batch is committed: past every run sent or skipped.
    through: i64,
    /// A run still being measured: the push stops before it, for good this
    /// sync, so the mark never passes a run that is not finished.
    blocked_at: Option<i64>,
}

fn plan_batch(runs: &[Mark], through: i64) -> BatchPlan {
    let mut plan = BatchPlan {
        push: Vec::new(),
        through,
        blocked_at: None,
    };
    for (i, m) in runs.iter().enumerate() {
        if m.running {
            plan.blocked_at = Some(m.id);
            break;
        }
        plan.through = m.id;
        // A run pulled from a team store goes back to none: it is theirs.
        if !m.pulled {
            plan.push.push(i);
        }
    }
    plan
}

/// The team's runs this database lacks, in the store's order.
fn to_pull(theirs: Vec<String>, have: &std::collections::HashSet<String>) -> Vec<String> {
    theirs.into_iter().filter(|u| !have.contains(u)).collect()
}

/// The longest the team store may take to answer one step of a sync (a
/// batch, a page of runs) before the sync gives up: `DYNO_TEAM_TIMEOUT`
/// seconds, else two minutes. A server that stops answering without
/// closing the connection (a dropped VPN, a stalled relay) sends no error,
/// so only a deadline on this side ends the wait.
fn step_deadline() -> std::time::Duration {
    let secs = std::env::var("DYNO_TEAM_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0 && *v <= 86_400.0)
        .unwrap_or(120.0);
    std::time::Duration::from_secs_f64(secs)
}

/// Each exchange with the team store raced against Cancel and the step
/// deadline, so neither a click on Cancel nor a silent server waits on a
/// socket that will never answer.
struct Guard<'a> {
    team: &'a TeamStore,
    cancel: &'a Cancel,
    deadline: std::time::Duration,
}

impl<'a> Guard<'a> {
    fn new(team: &'a TeamStore, cancel: &'a Cancel) -> Self {
        Guard {
            team,
            cancel,
            deadline: step_deadline(),
        }
    }

    /// `fut`'s answer; `None` when the sync was cancelled first (what is
    /// committed is kept; an abandoned transaction is rolled back by the
    /// server); an error when the store said nothing within the deadline.
    async fn run<T>(&self, fut: impl std::future::Future<Output = Result<T>>) -> Result<Option<T>> {
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        tokio::select! {
            r = fut => r.map(Some),
            _ = self.cancel.cancelled() => Ok(None),
            _ = tokio::time::sleep(self.deadline) => Err(DynoError::Team {
                store: self.team.label().to_string(),
                message: format!(
                    "it answered nothing for {:.0} s: the server may be down or the network cut off. What it committed is kept, and the next sync goes on from there (DYNO_TEAM_TIMEOUT sets the wait)",
                    self.deadline.as_secs_f64()
                ),
            }),
        }
    }
}

impl SyncReport {
    /// A sync that did nothing (cancelled before it began).
    fn empty(store: &str, machine: &str) -> SyncReport {
        SyncReport {
            store: store.to_string(),
            machine: machine.to_string(),
            pushed: 0,
            already_there: 0,
            telemetry_pushed: 0,
            pulled: 0,
            left_running: 0,
            skipped: 0,
            skipped_runs: Vec::new(),
            team_runs: 0,
            team_machines: 0,
            push_bytes: 0,
            push_seconds: 0.0,
            pull_seconds: 0.0,
            tls_warning: None,
        }
    }
}

/// Send the telemetry of runs `from.0 < id <= from.1`, pushed earlier
/// without it, marking progress per batch.
async fn push_telemetry(
    store: &Store,
    g: &Guard<'_>,
    here: &Machine,
    key: &str,
    from: (i64, i64),
    rep: &mut SyncReport,
) -> Result<()> {
    let (telemetry_through, through) = from;
    let mut at = telemetry_through;
    while !g.cancel.is_cancelled() {
        let rows = store.runs_after(at, BATCH).await?;
        let rows: Vec<_> = rows.into_iter().filter(|r| r.id <= through).collect();
        let Some(last) = rows.last().map(|r| r.id) else {
            break;
        };
        for row in rows.iter().filter(|r| r.pulled_from.is_none()) {
            if g.cancel.is_cancelled() {
                break;
            }
            let uid = uid_of(store, row, here).await?;
            let points = report::telemetry::timeline(store, row.id).await?;
            if !points.is_empty() {
                let json = serde_json::to_string(&points).expect("points serialise");
                match g.run(g.team.add_telemetry(&uid, &json)).await? {
                    Some(true) => rep.telemetry_pushed += 1,
                    Some(false) => {}
                    None => break,
                }
            }
        }
        if g.cancel.is_cancelled() {
            break;
        }
        store.set_sync_state(key, through, Some(last)).await?;
        at = last;
    }
    Ok(())
}

/// Store here the other machines' runs this database lacks; a document
/// this Dyno cannot read is skipped and named in `rep`.
async fn pull(
    store: &Store,
    g: &Guard<'_>,
    here: &Machine,
    key: &str,
    progress: &(dyn Fn(SyncProgress) + Send + Sync),
    rep: &mut SyncReport,
) -> Result<()> {
    let have = store.import_keys().await?;
    let theirs = g.run(g.team.uids_not_from(&here.fingerprint)).await?;
    let missing = to_pull(theirs.unwrap_or_default(), &have);
    let total = missing.len() as u64;
    let mut done = 0;
    progress(SyncProgress::Pulling { done, total });
    for chunk in missing.chunks(100) {
        if g.cancel.is_cancelled() {
            break;
        }
        let Some(docs) = g.run(g.team.docs(chunk)).await? else {
            break;
        };
        for d in docs {
            match pull_one(store, &d, here, key).await {
                Ok(added) => rep.pulled += added,
                // A document this Dyno cannot read is the document's
                // fault, not the sync's: one must not stop every pull.
                // Anything else (the local disk, the database) stops it.
                Err(DynoError::BadInput(reason)) => {
                    tracing::warn!("team run {} skipped: {reason}", d.uid);
                    rep.skipped += 1;
                    if rep.skipped_runs.len() < SKIPPED_NAMED {
                        rep.skipped_runs.push(SkippedRun {
                            uid: d.uid.clone(),
                            reason,
                        });
                    }
                }
                Err(e) => return Err(e),
            }
        }
        done += chunk.len() as u64;
        progress(SyncProgress::Pulling { done, total });
    }
    Ok(())
}

/// Store one team run here, marked as pulled from the store `key`; how
/// many runs that added (0 when this database had it already).
async fn pull_one(store: &Store, d: &team::TeamDoc, here: &Machine, key: &str) -> Result<u64> {
    let report = rt::from_team(d)?;
    let pulled = report::import::Pulled {
        uid: &d.uid,
        from: key,
    };
    let (added, _) = report::import::import_with(store, &report, here, Some(&pulled)).await?;
    // A run this database already had (imported from a file) is marked too,
    // so it is not pushed back.
    store.mark_pulled(&d.uid, key).await?;
    Ok(added as u64)
}

/// The uid a run has in a team store: the key it was imported under, or
/// the key of its own document.
async fn uid_of(store: &Store, row: &crate::store::RunRow, here: &Machine) -> Result<String> {
    if let Some(k) = &row.import_key {
        return Ok(k.clone());
    }
    let r = report::build(store, std::slice::from_ref(row), here).await?;
    Ok(report::import::key(&r, &r.runs[0]))
}

async fn team_run(
    store: &Store,
    row: &crate::store::RunRow,
    here: &Machine,
    with_telemetry: bool,
) -> Result<team::TeamRunIn> {
    let r = report::build(store, std::slice::from_ref(row), here).await?;
    let telemetry = if with_telemetry {
        let points = report::telemetry::timeline(store, row.id).await?;
        (!points.is_empty()).then(|| serde_json::to_string(&points).expect("points serialise"))
    } else {
        None
    };
    rt::to_team(&r, row.import_key.as_deref(), telemetry)
}

/// Open a team store for reading.
pub async fn open(url: &str) -> Result<TeamStore> {
    TeamStore::connect(url, Access::Read).await
}

/// A team run's report by (a prefix of) its uid.
pub async fn load(team: &TeamStore, id: &str) -> Result<Report> {
    let id = id.trim().strip_prefix("run:").unwrap_or(id.trim());
    let uid = team.resolve(id).await?;
    let docs = team.docs(std::slice::from_ref(&uid)).await?;
    let d = docs
        .first()
        .ok_or_else(|| DynoError::NotFound(format!("team run {uid} vanished while read")))?;
    rt::from_team(d)
}

/// Filters of the machines view and of team lists.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TeamQuery {
    /// A model's sha256 (or its first characters), file name or name.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub quant: Option<String>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub dyno_version: Option<String>,
}

impl TeamQuery {
    fn filter(&self, ok_only: bool) -> TeamFilter {
        let clean = |s: &Option<String>| {
            s.as_ref()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        TeamFilter {
            model: clean(&self.model),
            quant: clean(&self.quant),
            backend: clean(&self.backend),
            dyno_version: clean(&self.dyno_version),
            machine: None,
            ok_only,
        }
    }
}

/// The newest runs in the team store matching `q`.
pub async fn runs(team: &TeamStore, q: &TeamQuery, limit: i64) -> Result<Vec<TeamRunRow>> {
    team.runs(&q.filter(false), limit).await
}

/// Machines ranked by decode and prefill of one model and level: the one
/// `q` names, else the one most machines measured.
pub async fn machines(team: &TeamStore, q: &TeamQuery) -> Result<Ranking> {
    // The level picker lists every model and level under the backend and
    // version filters; the ranking then narrows to the model and level.
    let wide = TeamQuery {
        model: None,
        quant: None,
        ..q.clone()
    };
    let rows = team.runs(&wide.filter(true), i64::MAX / 2).await?;
    let narrowed = team.runs(&q.filter(true), i64::MAX / 2).await?;
    let pick = narrowed
        .first()
        .map(|r| (r.model_sha256.clone(), r.quant.clone()));
    let named = q.model.is_some() || q.quant.is_some();
    if named && pick.is_none() {
        let mut r = rt::rank(&[], None);
        r.choices = rt::levels(&rows);
        return Ok(r);
    }
    // With a model or level named, the level most machines measured among
    // the matches.
    let pick = if named {
        rt::levels(&narrowed)
            .first()
            .map(|l| (l.model_sha256.clone(), l.quant.clone()))
            .or(pick)
    } else {
        None
    };
    let mut ranking = rt::rank(&rows, pick.as_ref().map(|(s, q)| (s.as_str(), q.as_str())));
    ranking.choices = rt::levels(&rows);
    Ok(ranking)
}

/// The team's median decode and prefill for `report`'s model and level, to
/// set a machine against on its card. A card asked to compare with the team
/// and silently drawn without that block would look like a team of none, so
/// a team with no run of this file, level and test sizes is an error that
/// says what to do.
pub async fn median_for(team: &TeamStore, report: &Report) -> Result<TeamMedian> {
    let Some(run) = report.runs.first() else {
        return Err(DynoError::BadInput(
            "this report holds no run to set against the team".into(),
        ));
    };
    let q = TeamQuery {
        model: Some(run.model.sha256.clone()),
        quant: Some(run.model.quant.clone()),
        ..TeamQuery::default()
    };
    let rows = team.runs(&q.filter(true), i64::MAX / 2).await?;
    // This run's own test sizes: its decode is set against the team's
    // decode of the same tgN, its prefill against the same ppN.
    let first_ok = |kind: crate::vocab::TestKind| {
        run.results
            .iter()
            .find(|r| r.kind == kind && r.status == crate::vocab::status::ResultStatus::Ok)
    };
    let n_gen = first_ok(crate::vocab::TestKind::Gen).map(|r| r.n_gen);
    let n_prompt = first_ok(crate::vocab::TestKind::Prompt).map(|r| r.n_prompt);
    let pick = Some((run.model.sha256.as_str(), run.model.quant.as_str()));
    let same = |size: Option<u32>, of: fn(&TeamRunRow) -> Option<i64>| -> Vec<TeamRunRow> {
        rows.iter()
            .filter(|r| size.is_some() && of(r) == size.map(i64::from))
            .cloned()
            .collect()
    };
    let decode = rt::rank(&same(n_gen, |r| r.n_gen), pick);
    let prefill = rt::rank(&same(n_prompt, |r| r.n_prompt), pick);
    let machines = |r: &Ranking| r.level.as_ref().map_or(0, |l| l.machines);
    if decode.level.is_none() && prefill.level.is_none() {
        let sizes: Vec<String> = [
            n_prompt.map(|n| format!("pp{n}")),
            n_gen.map(|n| format!("tg{n}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        return Err(DynoError::BadInput(format!(
            "the team store has no run of {} at {} with this run's tests ({}); sync the machines that ran them (the Team view's Sync, or dyno sync), or pick a run of the sizes the team ran (the Team view's Machines, or dyno machines --model {} --quant {}, names them)",
            run.model.file_name,
            run.model.quant,
            if sizes.is_empty() { "none finished".to_string() } else { sizes.join(", ") },
            run.model.file_name,
            run.model.quant,
        )));
    }
    Ok(TeamMedian {
        machines: machines(&decode).max(machines(&prefill)),
        decode_tps: decode.median_decode_tps,
        prefill_tps: prefill.median_prefill_tps,
        n_gen,
        n_prompt,
    })
}

pub use crate::report::json::TeamMedian;

/// The team settings as the app's Team view shows them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TeamStatus {
    /// The saved URL (never with a password).
    pub saved_url: Option<String>,
    /// DYNO_TEAM_URL, its password hidden, when set: it wins over the saved
    /// URL.
    pub env_url: Option<String>,
    /// This machine's identity in a team store (DYNO_MACHINE_ID, else the
    /// hash of its hardware).
    pub machine: String,
    /// When this database last synced with the URL in force.
    pub last_sync_at: Option<String>,
    /// Runs here not yet pushed to it (measured or imported here).
    pub unsynced_runs: i64,
    /// The URL in force sends a password to another machine over a
    /// connection that may fall back to plain text (see
    /// [`team::tls_warning`]): said where the URL is shown, not only in a log.
    pub tls_warning: Option<String>,
}

pub async fn status(store: &Store) -> Result<TeamStatus> {
    let saved_url = store.setting(TEAM_URL).await?;
    let env = std::env::var("DYNO_TEAM_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    let env_url = env.as_deref().map(team::redact);
    let in_force = env.or_else(|| saved_url.clone());
    let tls_warning = in_force.as_deref().and_then(team::tls_warning);
    let (last_sync_at, unsynced_runs) = match &in_force {
        Some(u) => {
            // Offline: the store's id is not known here, so the mark of
            // the store at this address synced with last.
            let base = store_key(u);
            let key = store.last_sync_key(&base).await?.unwrap_or(base);
            let (through, _) = store.sync_state(&key).await?;
            (
                store.last_sync_at(&key).await?,
                store.count_runs_to_push(through).await?,
            )
        }
        None => (None, store.count_runs_to_push(0).await?),
    };
    Ok(TeamStatus {
        saved_url,
        env_url,
        machine: Machine::detect().fingerprint,
        last_sync_at,
        unsynced_runs,
        tls_warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(id: i64, running: bool, pulled: bool) -> Mark {
        Mark {
            id,
            running,
            pulled,
        }
    }

    #[test]
    fn a_batch_sends_its_own_runs_and_the_mark_passes_pulled_ones() {
        let runs = [
            mark(4, false, false),
            mark(5, false, true),
            mark(7, false, false),
        ];
        let plan = plan_batch(&runs, 3);
        assert_eq!(
            plan,
            BatchPlan {
                push: vec![0, 2],
                through: 7,
                blocked_at: None,
            }
        );
    }

    #[test]
    fn a_run_still_measured_stops_the_batch_and_the_mark_before_it() {
        let runs = [
            mark(4, false, false),
            mark(5, true, false),
            mark(6, false, false),
        ];
        let plan = plan_batch(&runs, 3);
        assert_eq!(plan.push, [0]);
        assert_eq!(plan.through, 4, "the mark never passes a run not finished");
        assert_eq!(plan.blocked_at, Some(5));
        // First in the batch: nothing is sent and the mark stays.
        let plan = plan_batch(&runs[1..], 4);
        assert_eq!((plan.push.len(), plan.through), (0, 4));
    }

    #[test]
    fn an_empty_batch_leaves_the_mark_where_it_was() {
        assert_eq!(
            plan_batch(&[], 9),
            BatchPlan {
                push: Vec::new(),
                through: 9,
                blocked_at: None,
            }
        );
    }

    #[test]
    fn only_runs_this_database_lacks_are_pulled_in_the_stores_order() {
        let have: std::collections::HashSet<String> = ["b".to_string()].into();
        let theirs = vec!["c".to_string(), "b".into(), "a".into()];
        assert_eq!(to_pull(theirs, &have), ["c", "a"]);
    }
}
