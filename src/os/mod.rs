//! The operating system's side of a run, as plain plumbing: the process table and signals
//! (`procs`), and bounded synchronous subprocesses (`subprocess`).

pub mod procs;
pub mod subprocess;
