//! Child processes that never outlive their starter: stopped on drop, SIGTERM first (a
//! process that supervises children of its own, such as `panel up`, then stops them too),
//! SIGKILL after a grace period.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::LocalClusterError;

/// How long a stopped process may take to exit after SIGTERM before it is killed.
pub const GRACE: Duration = Duration::from_secs(5);

/// One child process, stopped (SIGTERM, then SIGKILL after [`GRACE`]) when dropped, so a
/// failing caller leaves nothing running.
pub struct Process {
    name: String,
    child: Option<Child>,
}

impl Process {
    /// Starts `command` as the process called `name` (the name errors give).
    pub fn spawn(
        name: impl Into<String>,
        command: &mut Command,
    ) -> Result<Self, LocalClusterError> {
        let name = name.into();
        match command.spawn() {
            Ok(child) => Ok(Self {
                name,
                child: Some(child),
            }),
            Err(source) => Err(LocalClusterError::Spawn {
                name,
                program: PathBuf::from(command.get_program()),
                source,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id; 0 once the process was killed.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The child itself, for its pipes or `try_wait`; `None` once killed.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// SIGKILL (the `kill -9` of fault tests) and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Asks the process to stop (SIGTERM), unless it already exited: its pid may then
    /// be another process's.
    pub fn terminate(&mut self) {
        if let Some(c) = self.child.as_mut()
            && !matches!(c.try_wait(), Ok(Some(_)))
        {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Waits until the process exits or `deadline` passes.
    fn wait_until(&mut self, deadline: Instant) {
        if let Some(c) = self.child.as_mut() {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL; reaped either way.
    pub fn stop(&mut self, grace: Duration) {
        self.terminate();
        self.wait_until(Instant::now() + grace);
        self.kill();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(GRACE);
    }
}

/// Every process of one local cluster, all running one executable: stopped together, so
/// stopping takes one grace period, not one per process. Stopped when dropped.
pub struct Supervisor {
    program: PathBuf,
    processes: Vec<Process>,
}

impl Supervisor {
    /// A supervisor of processes of `program` (the `panel` executable or one that takes
    /// its arguments).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            processes: Vec::new(),
        }
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Starts `program ARGS` as `name`, its stdout and stderr both in the file `log`;
    /// returns its pid.
    pub fn spawn(
        &mut self,
        name: &str,
        args: &[impl AsRef<OsStr>],
        log: &Path,
    ) -> Result<u32, LocalClusterError> {
        let log_error = |source| LocalClusterError::Log {
            path: log.to_path_buf(),
            source,
        };
        let out = std::fs::File::create(log).map_err(log_error)?;
        let err = out.try_clone().map_err(log_error)?;
        self.start(name, args, out.into(), err.into())
    }

    /// Starts `program ARGS` as `name` with its output discarded; returns its pid.
    pub fn spawn_quiet(
        &mut self,
        name: &str,
        args: &[impl AsRef<OsStr>],
    ) -> Result<u32, LocalClusterError> {
        self.start(name, args, Stdio::null(), Stdio::null())
    }

    fn start(
        &mut self,
        name: &str,
        args: &[impl AsRef<OsStr>],
        out: Stdio,
        err: Stdio,
    ) -> Result<u32, LocalClusterError> {
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let process = Process::spawn(name, &mut command)?;
        let pid = process.id();
        self.processes.push(process);
        Ok(pid)
    }

    /// SIGTERM to every process, one [`GRACE`] for all of them to exit, then SIGKILL to
    /// those left.
    pub fn stop(&mut self) {
        for p in &mut self.processes {
            p.terminate();
        }
        let deadline = Instant::now() + GRACE;
        for p in &mut self.processes {
            p.wait_until(deadline);
            p.kill();
        }
        self.processes.clear();
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        // A reaped child has no /proc entry (a zombie would still have one).
        Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn stopping_the_supervisor_ends_every_child_within_the_grace() {
        let mut s = Supervisor::new("sleep");
        let a = s.spawn_quiet("sleeper a", &["30"]).expect("start sleep");
        let b = s.spawn_quiet("sleeper b", &["30"]).expect("start sleep");
        assert!(alive(a) && alive(b));
        let started = Instant::now();
        drop(s);
        assert!(started.elapsed() < GRACE, "sleep stops on SIGTERM");
        assert!(!alive(a) && !alive(b));
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = Process::spawn("nothing", &mut Command::new("/nonexistent/panel"))
            .err()
            .expect("no such program");
        let text = e.to_string();
        assert!(
            text.contains("nothing") && text.contains("/nonexistent/panel"),
            "{text}"
        );
    }

    #[test]
    fn a_log_file_that_cannot_be_created_is_named() {
        let mut s = Supervisor::new("true");
        let e = s
            .spawn("t", &["x"], Path::new("/nonexistent/dir/t.log"))
            .expect_err("no such folder");
        assert!(e.to_string().contains("/nonexistent/dir/t.log"), "{e}");
    }
}
