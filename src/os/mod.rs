//! The operating system's side of a run, as plain plumbing: the process table and signals
//! (`procs`), bounded synchronous subprocesses (`subprocess`), the environments of the
//! processes wakeprobe starts (`env`), and bounded reads of the files a user names (`files`).

pub mod env;
pub mod files;
pub mod procs;
pub mod subprocess;
