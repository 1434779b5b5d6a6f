//! Differential testing of the simulator: generated scenarios run on a reference CLI (the
//! real one) and on the simulator, their shapes compared as `conform` compares them, and every
//! difference sorted by kind and shrunk to the smallest scenario that still shows it.

pub mod generate;
pub mod kinds;
pub mod results;
