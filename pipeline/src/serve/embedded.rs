//! The default queue: in the server's process, worker threads for each GPU (as many as the
//! evaluator runs at once on one), each running the evaluator and storing straight into the
//! server's store.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use super::job::{Bench, JobSpec};
use super::service::{Queue, Service};
use crate::engine::stages::staged;

/// Jobs waiting for a worker thread.
#[derive(Debug, Default)]
pub struct Embedded {
    jobs: Mutex<VecDeque<JobSpec>>,
    ready: Condvar,
}

impl Queue for Embedded {
    fn push_all(&self, jobs: &[JobSpec]) -> Result<Vec<Option<String>>, String> {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(jobs.iter().cloned());
        self.ready.notify_all();
        Ok(vec![None; jobs.len()])
    }

    fn forgets_on_restart(&self) -> bool {
        true
    }

    fn cancel(&self, job: &JobSpec, _queued_at: Option<&str>) -> Result<bool, String> {
        let mut q = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let before = q.len();
        q.retain(|j| j.id != job.id);
        Ok(q.len() < before)
    }
}

impl Embedded {
    fn pop(&self) -> JobSpec {
        let mut q = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(j) = q.pop_front() {
                return j;
            }
            q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Serves `service` forever on GPUs `0..gpus`, through the stages `run` uses: jobs are
    /// checked and compiled ahead on the CPU, threads for each GPU run them, and a thread
    /// behind stores their records.
    pub fn start(self: &Arc<Self>, service: &Arc<Service>, bench: &Arc<Bench>, gpus: usize) {
        let gpus = gpus.max(1);
        let names: Vec<String> = (0..gpus).map(|g| format!("embedded/gpu{g}")).collect();
        for n in &names {
            service.worker_busy(n, 0.0);
        }
        let (queue, service, bench) = (self.clone(), service.clone(), bench.clone());
        std::thread::spawn(move || {
            staged(
                std::iter::from_fn(|| Some(queue.pop())),
                gpus,
                bench.evaluator.at_once(),
                |job| {
                    let id = job.id.clone();
                    // Cancelled or expired after a thread took it: its result would be dropped.
                    let ready = if service.result_dropped(&id) {
                        Err(format!("job {id}: cancelled or expired before it ran"))
                    } else {
                        bench.prepare_job(job)
                    };
                    (id, ready)
                },
                // The wait for a job is not timed here: an empty queue is not the CPU's doing.
                |gpu, (id, ready), _| {
                    let ran = bench.run_job(&id, ready, gpu, None);
                    if let Ok(r) = &ran {
                        service.worker_busy(&names[gpu], r.gpu_seconds());
                    }
                    (id, ran)
                },
                |(id, ran)| {
                    let result = bench.store_job(&id, ran);
                    service.complete(&id, result);
                },
            );
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::job::test_job as job;

    #[test]
    fn a_cancelled_job_leaves_the_in_process_queue() {
        let q = Embedded::default();
        q.push_all(&[job("a"), job("b"), job("c")]).expect("queued");
        assert_eq!(q.cancel(&job("b"), None), Ok(true));
        assert_eq!(q.cancel(&job("b"), None), Ok(false), "gone already");
        assert_eq!(q.pop().id, "a");
        assert_eq!(q.pop().id, "c");
        assert_eq!(q.cancel(&job("a"), None), Ok(false), "a worker took it");
    }
}
