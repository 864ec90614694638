//! The tools' presenters, called so that a panic costs a card its looks, not the view.

use dsh_kernel::contain::catch;
use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::{ToolCallView, ToolRegistry, ToolResultView};

/// How the tool shows `call`; `None` when it is not registered, has no view, or panicked.
pub(crate) fn call_view(tools: &dyn ToolRegistry, call: &ToolCallRecord) -> Option<ToolCallView> {
    let tool = tools.get(&call.name)?;
    catch(|| tool.present_call(call)).unwrap_or_else(|_| {
        tracing::warn!(tool = %call.name, "a tool's call presenter panicked; shown generically");
        None
    })
}

/// How the tool shows `result`; `None` likewise.
pub(crate) fn result_view(
    tools: &dyn ToolRegistry,
    call: &ToolCallRecord,
    result: &ToolResultRecord,
) -> Option<ToolResultView> {
    let tool = tools.get(&call.name)?;
    catch(|| tool.present_result(call, result)).unwrap_or_else(|_| {
        tracing::warn!(tool = %call.name, "a tool's result presenter panicked; shown generically");
        None
    })
}
