//! Worker processes: evaluations run in child `ptxbench worker DIR --gpu N` processes with a
//! wall-clock limit. Each evaluation gets a CUDA context of its own, created for it and
//! destroyed after it, so the next candidate starts on a clean one; a child serves several
//! evaluations one after another (`--evaluations`), paying the process's start-up (driver,
//! libraries) once, and exits after a candidate whose launch failed or faulted, after a harness
//! failure, or when its context reports an error: a fault never reaches a later candidate.
//!
//! The child opens a context and loads the harness first, then says `ready` on stdout (each
//! word after a token its parent drew for it, see [`protocol_word`]) and reads one line from
//! stdin: the [`Request`] as JSON. It writes the [`Outcome`] (JSON) and the cubin to files in
//! the exchange folder and says `again` (it destroys the context, opens a fresh one and says
//! `ready` once more) or `done` (it exits). Before its first timed workload it says `timing`
//! and waits for a line on stdin (or its end), so the parent can keep every other process's
//! start-up, context changes and exit off the GPU while it times.
//!
//! A [`Lane`] runs one GPU's evaluations one after another. With spares, the next workers are
//! started (or open their next context) while the current one evaluates, and the previous one
//! exits while the current one starts; the current one may time only once every spare is
//! ready and every earlier worker has exited. So start-up (driver, context, harness) and exit
//! overlap other candidates' correctness work and never their timing. A child that outlives
//! its limit is killed (verdict timeout); one that dies without an outcome (a fault the driver
//! turned into a crash) is a runtime verdict.

use crate::record::Stage;
use std::ffi::OsStr;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::harness_work::{HARNESS_FILE, HarnessAnswer, Work, WorkRef};
use super::{Outcome, Request, Verdict};

/// File names inside the exchange folder.
pub const OUTCOME_FILE: &str = "outcome.json";
pub const CUBIN_FILE: &str = "kernel.cubin";
/// What the child says on stdout (after its token) when it can take its request, before it
/// times, and when its outcome is written (it exits next).
pub const READY: &str = "ready";
pub const TIMING: &str = "timing";
pub const DONE: &str = "done";
/// What a child says instead of [`DONE`] when it stays: it closes the candidate's context,
/// opens a fresh one and says [`READY`] again.
pub const AGAIN: &str = "again";

/// Spare workers a lane keeps started (with spares at all): start-up takes longer than a short
/// evaluation, so one spare would keep the next evaluation waiting. `PTXBENCH_SPARES` sets
/// another number.
pub const SPARES: usize = 2;

/// Evaluations one worker process serves, each in a fresh context of its own, before it exits
/// (a candidate that faulted or failed to launch ends its process at once).
/// `PTXBENCH_WORKER_EVALUATIONS` sets another number; 1 is a process per evaluation.
pub const EVALUATIONS: usize = 64;

/// How long a worker may take to open its GPU and load the harness.
const START_LIMIT: Duration = Duration::from_secs(120);
/// How long an evaluation about to time waits for the other workers of its lane to finish
/// starting or exiting (normally well under a second).
const QUIET_LIMIT: Duration = Duration::from_secs(30);

/// A started worker process, before or while it evaluates.
#[derive(Debug)]
struct Started {
    child: Child,
    dir: crate::scratch::ScratchDir,
    stdin: Option<ChildStdin>,
    /// The child's stdout, line by line (closed when it exits).
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    ready: bool,
    /// Requests it may still take.
    left: usize,
}

impl Started {
    fn spawn(
        exe: &Path,
        gpu: usize,
        harness: Option<&Path>,
        evaluations: usize,
    ) -> Result<Started, String> {
        let dir = crate::scratch::ScratchDir::new().map_err(|e| format!("temp folder: {e}"))?;
        let token = format!(
            "{:016x}",
            crate::entropy::draw_u64().map_err(|e| e.to_string())?
        );
        let mut cmd = Command::new(exe);
        // The worker runs a candidate: it gets no API key or token of ours.
        crate::secrets::scrub(&mut cmd);
        let mut child = cmd
            .arg("worker")
            .arg(dir.path())
            .arg("--gpu")
            .arg(gpu.to_string())
            .arg("--token")
            .arg(&token)
            .arg("--evaluations")
            .arg(evaluations.to_string())
            .args(
                harness
                    .map(|h| [OsStr::new("--harness-cache"), h.as_os_str()])
                    .into_iter()
                    .flatten(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", exe.display()))?;
        let (tx, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                // Only the worker's own words pass; whatever else reaches its stdout (a
                // candidate's printf) is dropped here.
                for line in std::io::BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let Some(word) = protocol_word(&line, &token)
                        && tx.send(word.to_string()).is_err()
                    {
                        break;
                    }
                }
            });
        }
        let mut stderr = child.stderr.take();
        let stderr = std::thread::spawn(move || {
            // Only the end is kept: the harness and its libraries may say a lot.
            const KEEP: usize = 64 << 10;
            let mut kept = Vec::new();
            let mut buf = vec![0u8; 16 << 10];
            while let Some(e) = stderr.as_mut() {
                match std::io::Read::read(e, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.extend_from_slice(&buf[..n]);
                        if kept.len() > 2 * KEEP {
                            kept.drain(..kept.len() - KEEP);
                        }
                    }
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        });
        Ok(Started {
            stdin: child.stdin.take(),
            child,
            dir,
            lines,
            stderr: Some(stderr),
            ready: false,
            left: evaluations,
        })
    }

    /// Waits until the child said it is ready; false when it ended first or `deadline` passed.
    fn wait_ready(&mut self, deadline: Instant) -> bool {
        while !self.ready {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => self.ready = line == READY,
                Err(_) => return false,
            }
        }
        true
    }

    fn say(&mut self, line: &[u8]) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(line).and_then(|()| stdin.flush());
        }
    }

    /// Lets the child exit by itself until `by` (its drop then kills it if it is still there).
    fn wait_exit(&mut self, by: Instant) {
        while Instant::now() < by && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Kills the child (if it still runs) and reaps it.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last 2,000 characters the child wrote to stderr, with secrets redacted.
    fn stderr_tail(&mut self) -> String {
        let all = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let all = crate::secrets::redact(&all).into_owned();
        let skip = all.chars().count().saturating_sub(2000);
        all.chars().skip(skip).collect()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One GPU's worker processes: evaluations run one after another, each in a fresh context.
#[derive(Debug)]
pub struct Lane {
    exe: PathBuf,
    gpu: usize,
    /// Workers to keep started while one evaluates.
    spares: usize,
    spare: std::collections::VecDeque<Started>,
    /// Evaluations each worker serves (see [`EVALUATIONS`]).
    evaluations: usize,
    /// Workers that wrote their outcome and are exiting (their GPU context going away).
    retiring: Vec<Started>,
    /// Where its workers share the harness's compiled code (see [`Lane::sharing_harness`]).
    harness: Option<PathBuf>,
}

impl Lane {
    /// A lane that keeps `spares` workers started while one evaluates (0: each worker is
    /// started when its evaluation comes).
    pub fn new(exe: PathBuf, gpu: usize, spares: usize) -> Lane {
        Lane {
            exe,
            gpu,
            spares,
            spare: std::collections::VecDeque::new(),
            evaluations: EVALUATIONS,
            retiring: Vec::new(),
            harness: None,
        }
    }

    /// The same lane, its workers sharing the harness's PTX through `dir`: the first worker
    /// compiles it with NVRTC and leaves it there, the next ones load it (see
    /// [`crate::engine::support::Support::load_sharing`]).
    pub fn sharing_harness(mut self, dir: PathBuf) -> Lane {
        self.harness = Some(dir);
        self
    }

    /// The same lane, each worker serving up to `n` evaluations (at least 1), each in a fresh
    /// context.
    pub fn evaluations_per_worker(mut self, n: usize) -> Lane {
        self.evaluations = n.max(1);
        self
    }

    fn spawn(&self) -> Result<Started, String> {
        Started::spawn(
            &self.exe,
            self.gpu,
            self.harness.as_deref(),
            self.evaluations,
        )
    }

    /// Whether a spare worker is started (it may still be starting up).
    pub fn has_spare(&self) -> bool {
        !self.spare.is_empty()
    }

    /// Waits (until `deadline`) for every spare to be ready and every retiring worker to be
    /// gone, so that nothing else starts or stops on this GPU while an evaluation times.
    /// A worker that is not ready (or not gone) within [`QUIET_LIMIT`] is killed: a harness
    /// process stuck starting or exiting never costs the candidate its evaluation.
    pub fn quiet(&mut self, deadline: Instant) {
        let by = deadline.min(Instant::now() + QUIET_LIMIT);
        self.spare.retain_mut(|s| s.wait_ready(by));
        for mut r in self.retiring.drain(..) {
            r.wait_exit(by);
        }
    }

    /// Runs `req` in a worker process on this lane's GPU, killing it after `limit` from the
    /// moment it got the request.
    pub fn run(&mut self, req: &Request, limit: Duration) -> Outcome {
        let failed = |why: String| Outcome::failed(Verdict::Other, Stage::Worker, why);
        let body = match serde_json::to_vec(&WorkRef::Evaluate(req)) {
            Ok(mut b) => {
                b.push(b'\n');
                b
            }
            Err(e) => return failed(e.to_string()),
        };
        // Workers that finished exiting since the last evaluation are let go.
        self.retiring
            .retain_mut(|r| matches!(r.child.try_wait(), Ok(None)));
        // The oldest spare, unless it died starting up; else a fresh worker.
        let asked = Instant::now();
        let mut w = loop {
            match self.spare.pop_front() {
                Some(mut s) => {
                    if s.wait_ready(Instant::now() + START_LIMIT) {
                        break s;
                    }
                }
                None => match self.spawn() {
                    Ok(s) => break s,
                    Err(e) => return failed(e),
                },
            }
        };
        if !w.wait_ready(Instant::now() + START_LIMIT) {
            w.stop();
            let tail = w.stderr_tail();
            return failed(format!(
                "the worker did not start within {} s; its last output:\n{tail}",
                START_LIMIT.as_secs()
            ));
        }
        // What the GPU waited for a worker: a spare that is ready costs nothing.
        let started = ("worker start".to_string(), asked.elapsed().as_secs_f64());
        w.say(&body);
        // The next workers start now, beside this evaluation; one that will take another
        // request after this one counts as a spare already.
        let coming_back = w.left > 1;
        w.left -= 1;
        while self.spare.len() + usize::from(coming_back) < self.spares {
            match self.spawn() {
                Ok(s) => self.spare.push_back(s),
                Err(_) => break,
            }
        }
        let deadline = Instant::now() + limit;
        let mut done = false;
        let mut again = false;
        let timed_out = loop {
            match w
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) if line == TIMING => {
                    self.quiet(deadline);
                    w.say(b"go\n");
                }
                Ok(line) if line == DONE || line == AGAIN => {
                    done = true;
                    again = line == AGAIN;
                    break false;
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => break true,
                Err(RecvTimeoutError::Disconnected) => break false,
            }
        };
        if done {
            let mut o = match read_outcome(w.dir.path()) {
                Ok(o) => o,
                Err(why) => {
                    w.stop();
                    return failed(format!("the worker said it was done but {why}"));
                }
            };
            if again {
                // It opens a fresh context and says ready again: a spare, last in line.
                w.ready = false;
                self.spare.push_back(w);
            } else {
                // It exits by itself; its exit overlaps the next evaluation's start, never
                // its timing (see `quiet`).
                self.retiring.push(w);
            }
            clock_lane(&mut o, started, asked);
            return o;
        }
        // Its stdout closed: it is exiting (or closed stdout and hangs; the limit holds).
        let status = loop {
            match w.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if timed_out || Instant::now() > deadline => break None,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(_) => break None,
            }
        };
        let Some(status) = status else {
            w.stop();
            return Outcome::failed(
                Verdict::Timeout,
                Stage::Worker,
                format!(
                    "no result within {} s; the worker was killed (a hang?)",
                    limit.as_secs()
                ),
            );
        };
        let tail = w.stderr_tail();
        match read_outcome(w.dir.path()) {
            Ok(mut o) => {
                clock_lane(&mut o, started, asked);
                o
            }
            // The harness's own failure (a full or unwritable temp folder) is never the
            // candidate's verdict: `other`, graded again by the next run.
            Err(_) => match harness_cause(w.dir.path(), &tail) {
                Some(cause) => failed(format!(
                    "the worker died ({status}) without a result because of the harness: {cause}"
                )),
                None => Outcome::failed(
                    Verdict::Runtime,
                    Stage::Worker,
                    format!(
                        "the worker died ({status}) without a result; its last output:\n{tail}"
                    ),
                ),
            },
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Spares are killed (by their own drop); retiring workers are let finish exiting, for
        // a while (then killed: a harness process stuck in its exit never holds up the run).
        let by = Instant::now() + QUIET_LIMIT;
        for mut r in self.retiring.drain(..) {
            r.wait_exit(by);
        }
    }
}

/// Runs the harness's own `work` (a baseline or a reference, never an evaluation) in a worker
/// process on `gpu`, killed after `limit` from the moment it got the work; `take` reads what
/// the worker left in its exchange folder (the files its answer names) before the folder goes.
pub fn run_harness<R>(
    exe: &Path,
    gpu: usize,
    work: &Work,
    limit: Duration,
    take: impl FnOnce(&Path) -> Result<R, String>,
) -> Result<(HarnessAnswer, R), String> {
    if matches!(work, Work::Evaluate(_)) {
        return Err("an evaluation goes through a lane, not run_harness".into());
    }
    let mut body = serde_json::to_vec(work).map_err(|e| e.to_string())?;
    body.push(b'\n');
    let mut w = Started::spawn(exe, gpu, None, 1)?;
    if !w.wait_ready(Instant::now() + START_LIMIT) {
        w.stop();
        let tail = w.stderr_tail();
        return Err(format!(
            "the worker did not start within {} s; its last output:\n{tail}",
            START_LIMIT.as_secs()
        ));
    }
    w.say(&body);
    let deadline = Instant::now() + limit;
    let done = loop {
        match w
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            // Nothing else shares this worker's GPU lane: it may time at once.
            Ok(line) if line == TIMING => w.say(b"go\n"),
            Ok(line) if line == DONE || line == AGAIN => break true,
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => {
                w.stop();
                return Err(format!(
                    "no answer within {} s; the worker was killed",
                    limit.as_secs()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => break false,
        }
    };
    let file = w.dir.path().join(HARNESS_FILE);
    let answer = std::fs::read(&file)
        .map_err(|e| format!("left no answer ({e})"))
        .and_then(|b| {
            serde_json::from_slice::<HarnessAnswer>(&b)
                .map_err(|e| format!("left an answer that does not read back ({e})"))
        });
    let answer = match answer {
        Ok(a) => a,
        Err(why) => {
            w.stop();
            let tail = w.stderr_tail();
            let how = if done {
                "said it was done but"
            } else {
                "died and"
            };
            return Err(format!("the worker {how} {why}; its last output:\n{tail}"));
        }
    };
    let taken = take(w.dir.path())?;
    w.wait_exit(Instant::now() + QUIET_LIMIT);
    Ok((answer, taken))
}

/// Adds the lane's laps to a worker's outcome: `started` (waiting for a ready worker) first,
/// and last the hand-over: the rest of the lane's time since `asked`, beyond the worker's own
/// laps after its setup (sending the request, starting the next spares, the worker writing its
/// outcome, reading it back).
fn clock_lane(o: &mut Outcome, started: (String, f64), asked: Instant) {
    let worker: f64 = o
        .seconds
        .iter()
        .filter(|(k, _)| !k.starts_with(super::SETUP))
        .map(|(_, s)| s)
        .sum();
    let rest = (asked.elapsed().as_secs_f64() - started.1 - worker).max(0.0);
    o.seconds.insert(0, started);
    o.seconds.push((super::HAND_OVER.to_string(), rest));
}

/// The outcome (and cubin) a worker wrote into `dir`, if it wrote one. Both files are taken
/// out of the folder, so that a worker that serves another request and dies without an
/// outcome is never read as having this one.
/// Why a worker that died without a result died of the harness, if it did: its folder cannot
/// take a file (full, read-only, gone), or what it printed last is such an I/O failure.
fn harness_cause(dir: &Path, tail: &str) -> Option<String> {
    let probe = dir.join(".ptxbench-probe");
    let written = std::fs::write(&probe, [0u8; 4096]);
    let _ = std::fs::remove_file(&probe);
    if let Err(e) = written {
        return Some(format!("its temp folder cannot take a file ({e})"));
    }
    [
        "No space left on device",
        "Read-only file system",
        "Disk quota exceeded",
        "temp folder:",
    ]
    .iter()
    .find(|m| tail.contains(*m))
    .map(|m| format!("it reported `{m}`"))
}

fn read_outcome(dir: &Path) -> Result<Outcome, String> {
    let outcome = dir.join(OUTCOME_FILE);
    let cubin = dir.join(CUBIN_FILE);
    let read = std::fs::read(&outcome)
        .map_err(|e| format!("left no outcome ({e})"))
        .and_then(|b| {
            serde_json::from_slice::<Outcome>(&b)
                .map_err(|e| format!("left an outcome that does not read back ({e})"))
        });
    let bytes = std::fs::read(&cubin).ok();
    let _ = std::fs::remove_file(outcome);
    let _ = std::fs::remove_file(cubin);
    let mut o = read?;
    o.cubin = bytes;
    Ok(o)
}

/// The protocol word of a line of the worker's stdout: what follows `token` in it. A candidate
/// shares that stdout (device `printf` writes to it) but cannot know the token, drawn for each
/// worker by its parent, so nothing it prints passes for `done` or `timing`; a line it left
/// unfinished before the worker's word does not hide the word either.
fn protocol_word<'a>(line: &'a str, token: &str) -> Option<&'a str> {
    let at = line.find(token)?;
    Some(line[at + token.len()..].trim())
}

/// The child's side: up to `evaluations` times, open GPU `gpu` in a fresh context with the
/// harness, say ready, read a request, evaluate, write the outcome, and close the context.
/// After each outcome it says [`AGAIN`] when it will open another context and take another
/// request, else [`DONE`] (then it exits). Each protocol word goes out after `token`. An end of
/// stdin before a request (a spare nobody needed) is no error.
pub fn serve(
    dir: &Path,
    gpu: usize,
    token: &str,
    harness: Option<&Path>,
    evaluations: usize,
) -> std::io::Result<()> {
    let mut stdout = std::io::stdout();
    let mut stdin = std::io::stdin().lock();
    for left in (1..=evaluations.max(1)).rev() {
        let opened = super::evaluate::Opened::open(gpu, harness);
        writeln!(stdout, "{token} {READY}")?;
        stdout.flush()?;
        let mut line = String::new();
        if stdin.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut gate = || {
            let _ = writeln!(stdout, "{token} {TIMING}").and_then(|()| stdout.flush());
            let mut go = String::new();
            let _ = stdin.read_line(&mut go);
        };
        let atomic = |path: &Path, bytes: &[u8]| {
            crate::destination::write_atomic(path, bytes)
                .map_err(|e| std::io::Error::other(e.to_string()))
        };
        let outcome = match serde_json::from_str::<Work>(&line) {
            Ok(Work::Evaluate(req)) if req.gpu != gpu => Outcome::failed(
                Verdict::Other,
                Stage::Worker,
                format!(
                    "a request for GPU {} reached the worker of GPU {gpu}",
                    req.gpu
                ),
            ),
            Ok(Work::Evaluate(req)) => super::evaluate::evaluate_opened(&req, &opened, &mut gate),
            Ok(work) => {
                // The harness's own work: its answer, then this worker exits.
                let answer = super::harness_work::run(&work, opened.ready(), dir);
                let json = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
                atomic(&dir.join(HARNESS_FILE), &json)?;
                writeln!(stdout, "{token} {DONE}")?;
                stdout.flush()?;
                break;
            }
            Err(e) => Outcome::failed(Verdict::Other, Stage::Worker, format!("bad request: {e}")),
        };
        if let Some(cubin) = &outcome.cubin {
            atomic(&dir.join(CUBIN_FILE), cubin)?;
        }
        let json = serde_json::to_vec(&outcome).map_err(std::io::Error::other)?;
        // Whole or not at all: a half-written outcome must never be read as a result.
        atomic(&dir.join(OUTCOME_FILE), &json)?;
        let again = left > 1 && opened.reusable(&outcome);
        writeln!(stdout, "{token} {}", if again { AGAIN } else { DONE })?;
        stdout.flush()?;
        // Only now the context is closed (everything the candidate left in it goes with it),
        // while the lane goes on.
        drop(opened);
        if !again {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55, finding 4: a worker that died because its temp folder was full or gone was
    /// graded `runtime`, the model's failure. Those causes are the harness's.
    #[test]
    fn issue_55_a_worker_killed_by_its_temp_folder_is_the_harness() {
        let gone = tempfile::tempdir().expect("tempdir");
        let path = gone.path().to_path_buf();
        drop(gone);
        let why = harness_cause(&path, "").expect("a folder that cannot take a file");
        assert!(why.contains("cannot take a file"), "{why}");
        let live = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            harness_cause(live.path(), "CUDA_ERROR_ILLEGAL_ADDRESS"),
            None
        );
        let why = harness_cause(live.path(), "writing outcome.json: No space left on device")
            .expect("a full disk");
        assert!(why.contains("No space left"), "{why}");
    }

    #[test]
    fn only_words_after_the_token_count() {
        let t = "0123456789abcdef";
        assert_eq!(protocol_word(&format!("{t} done"), t), Some("done"));
        assert_eq!(
            protocol_word(&format!("unfinished printf{t} timing"), t),
            Some("timing")
        );
        assert_eq!(protocol_word("done", t), None);
        assert_eq!(protocol_word("fedcba9876543210 done", t), None);
    }
}
