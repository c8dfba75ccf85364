//! The model-facing tools: one dispatch entry point taking a tool name, JSON
//! arguments and a [`CallContext`], returning a [`ToolResult`]
//! (`contract.md` §5).

pub mod context;
pub mod files;
pub mod result;

pub use context::CallContext;
pub use result::{ErrorInfo, ToolError, ToolResult};
