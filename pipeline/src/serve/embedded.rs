//! The default queue: in the server's process, one worker thread per GPU, each running the
//! evaluator and storing straight into the server's store.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use super::job::{Bench, JobSpec};
use super::service::{Queue, Service};

/// Jobs waiting for a worker thread.
#[derive(Debug, Default)]
pub struct Embedded {
    jobs: Mutex<VecDeque<JobSpec>>,
    ready: Condvar,
}

impl Queue for Embedded {
    fn push_all(&self, jobs: &[JobSpec]) -> Result<(), String> {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(jobs.iter().cloned());
        self.ready.notify_all();
        Ok(())
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

    /// Starts one worker thread per GPU (`gpus` of them) that serve `service` forever.
    pub fn start(self: &Arc<Self>, service: &Arc<Service>, bench: &Arc<Bench>, gpus: usize) {
        for gpu in 0..gpus.max(1) {
            let (queue, service, bench) = (self.clone(), service.clone(), bench.clone());
            let name = format!("embedded/gpu{gpu}");
            service.worker_busy(&name, 0.0);
            std::thread::spawn(move || {
                loop {
                    let job = queue.pop();
                    // A panic ends this job (without a record), not the worker.
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        bench.evaluate(&job, gpu, None)
                    }))
                    .unwrap_or_else(|_| Err(format!("job {}: the worker panicked", job.id)));
                    if let Ok(a) = &result {
                        service.worker_busy(&name, a.gpu_seconds);
                    }
                    service.complete(&job.id, result);
                }
            });
        }
    }
}
