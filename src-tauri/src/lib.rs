pub use dyno;
