//! The model-facing tools: one dispatch entry point taking a tool name, JSON
//! arguments and a [`CallContext`], returning a [`ToolResult`]
//! (`contract.md` §5).
//!
//! The flow of a search call: `args` (schema validation, the tools' own
//! checks) → `search` (the backend, the failure ladder, the canonical
//! value) → `render` (the model's text, the presentation meta), all
//! driven by [`Tools`] (`dispatch`). [`definitions`] holds the tools as data.

mod args;
mod context;
pub mod definitions;
mod dispatch;
mod display;
mod files;
mod name;
mod render;
mod result;
mod search;

pub use context::CallContext;
pub use definitions::ToolDefinition;
pub use dispatch::{CallGuard, Tools};
pub use name::{ToolName, UnknownTool};
pub use render::call_title;
pub use result::{ErrorInfo, ToolError, ToolResult};
#[cfg(test)]
pub(crate) use search::GrepMatch;
