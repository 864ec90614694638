//! The composition root: the one place that names providers. Plugins load in dependency
//! order — persistence, the session store with its bridge, the model, the shell executor, the
//! tool registry and the bash tools, the agent's context, the agent loop — and the front end
//! runs on the root scope.
//! Every exit path but SIGKILL ends in `Runtime::shutdown`, which disposes in reverse order,
//! so every session log is closed.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent::AgentOptions;
use dsh_agent_context::{ContextConfig, ContextPlugin};
use dsh_agent_loop::{AgentLoopPlugin, LoopConfig, Remembered};
use dsh_fs_local::FsLocalPlugin;
use dsh_hooks_command::HooksPlugin;
use dsh_kernel::{Plugin, Runtime};
use dsh_mcp_rmcp::RmcpPlugin;
use dsh_session::SessionStorePlugin;
use dsh_shell::SandboxPolicy;
use dsh_shell_local::{LocalShellConfig, ShellLocalPlugin};
use dsh_tool_bash::{BashToolsPlugin, ToolBashConfig};
use dsh_tool_fs::{FsToolsPlugin, ToolFsConfig};
use dsh_tool_mcp::McpToolsPlugin;
use dsh_tool_task::{TaskConfig, TaskPlugin};
use dsh_tool_todo::TodoPlugin;
use dsh_tools::{ToolRegistry, ToolRegistryPlugin};

use crate::exit::Failure;
use crate::settings::Settings;
use crate::store::Store;

/// Builds the runtime with every plugin loaded, the model from `model` (none: a server that
/// refuses sessions until the user sets a key up).
pub async fn compose(
    settings: &Settings,
    store: &Store,
    model: Option<Box<dyn Plugin>>,
) -> Result<Arc<Runtime>, Failure> {
    let runtime = Arc::new(Runtime::new());
    let loaded = load_all(&runtime, settings, store, model).await;
    if let Err(failure) = loaded {
        runtime.shutdown().await;
        return Err(failure);
    }
    Ok(runtime)
}

async fn load_all(
    runtime: &Runtime,
    settings: &Settings,
    store: &Store,
    model: Option<Box<dyn Plugin>>,
) -> Result<(), Failure> {
    let failed = |what: &str, e: dsh_kernel::KernelError| {
        Failure::internal(format!("cannot start {what}: {e}"))
    };
    runtime
        .load(store.plugin())
        .await
        .map_err(|e| failed(&format!("the session store ({})", store.shown()), e))?;
    runtime
        .load(SessionStorePlugin)
        .await
        .map_err(|e| failed("the session store", e))?;
    if let Some(model) = model {
        runtime
            .load(model)
            .await
            .map_err(|e| failed("the model", e))?;
    }
    runtime
        .load(ShellLocalPlugin::new(LocalShellConfig {
            watchdog: Some(watchdog_program()),
            sandbox_helper: Some(watchdog_program()),
            ..LocalShellConfig::default()
        }))
        .await
        .map_err(|e| failed("the shell", e))?;
    runtime
        .load(FsLocalPlugin::default())
        .await
        .map_err(|e| failed("the local files", e))?;
    runtime
        .load(ToolRegistryPlugin)
        .await
        .map_err(|e| failed("the tool registry", e))?;
    runtime
        .load(BashToolsPlugin::new(ToolBashConfig {
            sandbox: sandbox_policy(settings),
            ..ToolBashConfig::default()
        }))
        .await
        .map_err(|e| failed("the bash tools", e))?;
    runtime
        .load(FsToolsPlugin::new(ToolFsConfig {
            search_timeout: settings.search_timeout.value,
            ..ToolFsConfig::default()
        }))
        .await
        .map_err(|e| failed("the file tools", e))?;
    runtime
        .load(TodoPlugin)
        .await
        .map_err(|e| failed("the todo tool", e))?;
    if settings.subagent_depth.value > 0 {
        runtime
            .load(TaskPlugin::new(TaskConfig {
                max_depth: settings.subagent_depth.value,
                max_running: settings.subagent_running.value,
                max_steps: settings.subagent_steps.value,
                agents_dir: settings.user_agents(),
                listed_from: std::env::current_dir().ok(),
            }))
            .await
            .map_err(|e| failed("the task tool", e))?;
    }
    runtime
        .load(RmcpPlugin)
        .await
        .map_err(|e| failed("the MCP client", e))?;
    runtime
        .load(mcp_servers(settings))
        .await
        .map_err(|e| failed("the MCP servers' tools", e))?;
    // Always there: a session's project hooks are read by its own directory, which an ACP
    // client names per session.
    let (user_hooks, claude) = crate::hooks::user_hooks(settings)?;
    runtime
        .load(HooksPlugin::new(
            user_hooks,
            claude,
            settings.data_dir.value.clone(),
            sandbox_policy(settings),
        ))
        .await
        .map_err(|e| failed("the hooks", e))?;
    runtime
        .load(ContextPlugin::new(context(settings)?))
        .await
        .map_err(|e| failed("the agent's context", e))?;
    let rules = permission_rules(settings)?;
    let config = LoopConfig {
        defaults: options(settings),
        rules: Arc::new(rules),
        remembered: Remembered(Some(remembered(settings))),
        ..LoopConfig::default()
    };
    runtime
        .load(AgentLoopPlugin::new(config))
        .await
        .map_err(|e| failed("the agent loop", e))?;
    Ok(())
}

/// Where "always" answers are remembered: a file in the data directory.
pub fn remembered(settings: &Settings) -> Arc<dyn dsh_tools::RememberedRules> {
    Arc::new(crate::remembered::RuleFile::new(&settings.data_dir.value))
}

/// The configuration's permission rules, with the default denies behind them.
pub fn permission_rules(settings: &Settings) -> Result<dsh_tools::PermissionRules, Failure> {
    let rules = &settings.permissions;
    dsh_tools::PermissionRules::new(&rules.allow, &rules.ask, &rules.deny)
        .map_err(|e| Failure::config(e.to_string()))
}

/// Loads what presents stored tool calls as they were shown live: the built-in tools (never
/// called), without the model, the agents or any MCP server (whose calls show generically).
pub async fn presenters(runtime: &Runtime) -> Result<Arc<dyn ToolRegistry>, Failure> {
    let failed = |what: &str, e: dsh_kernel::KernelError| {
        Failure::internal(format!("cannot start {what}: {e}"))
    };
    let plugins: [(&str, Box<dyn Plugin>); 7] = [
        (
            "the shell",
            Box::new(ShellLocalPlugin::new(LocalShellConfig::default())),
        ),
        ("the local files", Box::new(FsLocalPlugin::default())),
        ("the tool registry", Box::new(ToolRegistryPlugin)),
        ("the bash tools", Box::new(BashToolsPlugin::default())),
        (
            "the file tools",
            Box::new(FsToolsPlugin::new(ToolFsConfig::default())),
        ),
        ("the todo tool", Box::new(TodoPlugin)),
        ("the task tool", Box::new(TaskPlugin::default())),
    ];
    for (what, plugin) in plugins {
        runtime.load(plugin).await.map_err(|e| failed(what, e))?;
    }
    runtime
        .scope()
        .require::<dyn ToolRegistry>()
        .map_err(|e| failed("the tool registry", e))
}

/// The context service's configuration. A prompt file the user named must be there: a typo
/// is a configuration error at start, not a failed first turn.
fn context(settings: &Settings) -> Result<ContextConfig, Failure> {
    let system_prompt_file = match &settings.system_prompt_file {
        None => None,
        Some(set) => {
            let path = &set.value;
            match std::fs::metadata(path) {
                Ok(meta) if meta.is_file() => Some(path.clone()),
                Ok(_) => {
                    return Err(Failure::config(format!(
                        "system_prompt_file {} ({}): not a file",
                        path.display(),
                        set.source
                    )));
                }
                Err(e) => {
                    return Err(Failure::config(format!(
                        "system_prompt_file {} ({}): {e}",
                        path.display(),
                        set.source
                    )));
                }
            }
        }
    };
    Ok(ContextConfig {
        system_prompt_file,
        project_instructions: settings.project_instructions.value,
        user_instructions: settings.user_instructions(),
        ..ContextConfig::default()
    })
}

fn options(settings: &Settings) -> AgentOptions {
    let mut options = AgentOptions::default();
    options.max_output_tokens = Some(settings.max_tokens.value);
    options.max_tool_calls = settings.max_tool_calls.value;
    options.temperature = settings.temperature.value;
    options.reasoning = settings.reasoning.value;
    options.context_window = settings.context_window.value;
    options.compact_at = settings.compact_at.value;
    options.keep_tool_output = settings.keep_tool_output.value;
    if let Some(steps) = settings.max_steps.value {
        options.max_steps = steps;
    }
    options
}

/// The sandbox the settings ask commands to run in; the bash tool adds each session's roots
/// to a `workspace-write` one.
pub fn sandbox_policy(settings: &Settings) -> SandboxPolicy {
    match settings.sandbox.value.as_str() {
        "read-only" => SandboxPolicy::ReadOnly,
        "full-access" => SandboxPolicy::FullAccess,
        _ => SandboxPolicy::WorkspaceWrite {
            writable: settings.writable_roots.clone(),
            network: settings.sandbox_network.value,
        },
    }
}

/// What this machine's kernel gives the sandbox, in words (`dsh config`): the helper is
/// asked in a process of its own.
pub fn sandbox_kernel() -> String {
    match dsh_shell_local::sandbox::probe(&watchdog_program()) {
        Ok(achieved) => format!(
            "Landlock ABI {}, {} enforced; {}",
            achieved.abi,
            if achieved.fully { "fully" } else { "partly" },
            match &achieved.git_unguarded {
                None => ".git/hooks and .git/config kept read-only".to_owned(),
                Some(reason) => format!(".git not protected ({reason})"),
            }
        ),
        Err(reason) => format!("unavailable: {reason}"),
    }
}

/// The warnings a run starts with: its sandbox's, then its hooks'.
pub fn start_notices(runtime: &Runtime, settings: &Settings) -> Vec<String> {
    let mut notices = sandbox_notices(runtime, settings);
    notices.extend(crate::hooks::notices(settings));
    notices
}

/// The warnings a run starts with about its sandbox: that it cannot be had here, saying
/// what dsh does instead, or what it cannot do here; none when commands run as configured.
pub fn sandbox_notices(runtime: &Runtime, settings: &Settings) -> Vec<String> {
    let policy = sandbox_policy(settings);
    if policy == SandboxPolicy::FullAccess {
        return Vec::new();
    }
    let Some(executor) = runtime.scope().get::<dyn dsh_shell::ShellExecutor>() else {
        return Vec::new();
    };
    match executor.sandbox() {
        Ok(caveats) => caveats,
        Err(reason) => vec![format!(
            "the {} sandbox cannot start here ({reason}): dsh asks before every command \
             (--sandbox full-access runs them unconfined without asking)",
            policy.name()
        )],
    }
}

/// The sandbox of a server with `sandbox = true`: its directory (dsh's when it names none)
/// and the configured writable roots writable, the network as `[sandbox]` says. A server the
/// user asked to confine stays confined under `--sandbox full-access`, which is about
/// commands; `read-only` leaves it nothing writable.
fn mcp_sandbox(settings: &Settings, transport: &dsh_mcp::Transport) -> dsh_mcp::Sandbox {
    let cwd = match transport {
        dsh_mcp::Transport::Stdio { cwd: Some(cwd), .. } => Some(cwd.clone()),
        dsh_mcp::Transport::Stdio { cwd: None, .. } | dsh_mcp::Transport::Http { .. } => {
            std::env::current_dir().ok()
        }
    };
    let writable = match sandbox_policy(settings) {
        SandboxPolicy::ReadOnly => Vec::new(),
        SandboxPolicy::WorkspaceWrite { writable, .. } => cwd.into_iter().chain(writable).collect(),
        SandboxPolicy::FullAccess => cwd.into_iter().collect(),
    };
    dsh_mcp::Sandbox {
        writable,
        network: settings.sandbox_network.value,
    }
}

/// This binary, which runs as the shell's watchdog when asked to (`main`). On Linux the link
/// `/proc/self/exe` execs this very binary even when its file was replaced or removed since.
fn watchdog_program() -> PathBuf {
    let link = PathBuf::from("/proc/self/exe");
    if link.exists() {
        link
    } else {
        std::env::current_exe().unwrap_or(link)
    }
}

/// The enabled servers of `[mcp_servers]` to start; one that cannot be described (a
/// `"$NAME"` that is not set) is reported as a server that fails to start is.
fn mcp_servers(settings: &Settings) -> McpToolsPlugin {
    let mut specs = Vec::new();
    let mut failed = Vec::new();
    for (server, _) in settings.mcp_servers.iter().filter(|(s, _)| s.enabled) {
        match server.spec() {
            Ok(mut spec) => {
                if let Some(sandbox) = &mut spec.sandbox {
                    *sandbox = mcp_sandbox(settings, &spec.transport);
                }
                specs.push(spec);
            }
            Err(reason) => failed.push(dsh_mcp::McpError::Start {
                server: server.name.clone(),
                reason,
            }),
        }
    }
    McpToolsPlugin::new(specs).with_failed(failed)
}
