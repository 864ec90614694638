//! The kernel's error vocabulary and the [`Outcome`] conversion shared by disposers and
//! listeners.

/// Any error a plugin, disposer or listener may return. Boxed because the kernel only logs or
/// forwards it; it never matches on a plugin's own error type.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of the runtime: scopes, services and plugins.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// An effect (disposer, child scope, service, listener or task) was added to a scope whose
    /// disposal has begun. Nothing was registered.
    #[error("scope `{scope}` is disposing or disposed and accepts no new {what}")]
    ScopeClosed {
        /// The scope's path, e.g. `root/plugin:shell-local`.
        scope: String,
        /// What the caller tried to add.
        what: &'static str,
    },
    /// A second provider offered a service that is already provided.
    #[error("service `{service}` is already provided by scope `{provider}`")]
    DuplicateService {
        /// The service type, as `std::any::type_name` spells it.
        service: &'static str,
        /// The path of the scope that provides it now.
        provider: String,
    },
    /// A required service is not provided: never loaded, or its providing scope was disposed.
    #[error(
        "service `{service}` is not provided (no plugin provides it, or its provider was disposed)"
    )]
    MissingService {
        /// The service type, as `std::any::type_name` spells it.
        service: &'static str,
    },
    /// Tasks are spawned on tokio; the call was made outside a tokio runtime.
    #[error("scope `{scope}` cannot spawn a task outside a tokio runtime")]
    NoRuntime {
        /// The scope's path.
        scope: String,
    },
    /// A plugin name must be non-empty and free of `/` (it becomes a scope path segment).
    #[error("invalid plugin name {name:?}: a plugin name is non-empty and contains no '/'")]
    InvalidPluginName {
        /// The rejected name.
        name: String,
    },
    /// A plugin of that name is already loaded (or being loaded).
    #[error("plugin `{name}` is already loaded; use reload to replace it")]
    DuplicatePlugin {
        /// The plugin's name.
        name: String,
    },
    /// No plugin of that name is loaded.
    #[error("plugin `{name}` is not loaded")]
    UnknownPlugin {
        /// The plugin's name.
        name: String,
    },
    /// Another load, unload or reload of the same plugin is in progress.
    #[error("plugin `{name}` is busy with another load, unload or reload; try again when it ends")]
    PluginBusy {
        /// The plugin's name.
        name: String,
    },
    /// A plugin refused to be unloaded or reloaded now (an unload check registered with
    /// [`crate::Scope::add_unload_check`] failed). The plugin stays loaded and unchanged.
    #[error("plugin `{name}` refused to unload: {source}")]
    UnloadRefused {
        /// The plugin's name.
        name: String,
        /// What the plugin's check said.
        #[source]
        source: BoxError,
    },
    /// A scope cannot own itself.
    #[error("scope `{scope}` cannot own itself")]
    OwnsItself {
        /// The scope's path.
        scope: String,
    },
    /// [`crate::Teardown::for_scope`] takes a detached scope: a kernel child is disposed by
    /// its parent, which would skip the teardown's steps.
    #[error("scope `{scope}` is a child in the scope tree; only a detached scope takes a teardown")]
    NotDetached {
        /// The scope's path.
        scope: String,
    },
    /// A detached scope already has its teardown.
    #[error("scope `{scope}` already has a teardown")]
    TeardownBound {
        /// The scope's path.
        scope: String,
    },
    /// A graceful task needs tokio's timers; the current runtime was built without them.
    #[error(
        "scope `{scope}` cannot spawn a graceful task: the tokio runtime has no timer (enable_time)"
    )]
    NoTimer {
        /// The scope's path.
        scope: String,
    },
    /// The runtime is shutting down and loads no more plugins.
    #[error("the runtime is shutting down; plugin `{name}` was not loaded")]
    ShuttingDown {
        /// The plugin's name.
        name: String,
    },
    /// `Plugin::apply` returned an error. Everything it had registered was disposed again.
    #[error("plugin `{name}` failed to apply (nothing of it stays registered): {source}")]
    PluginApply {
        /// The plugin's name.
        name: String,
        /// The plugin's error.
        #[source]
        source: BoxError,
    },
    /// `Plugin::apply` panicked. Everything it had registered was disposed again.
    #[error("plugin `{name}` panicked while applying (nothing of it stays registered): {message}")]
    PluginPanicked {
        /// The plugin's name.
        name: String,
        /// The panic payload, when it was a string.
        message: String,
    },
}

impl KernelError {
    /// The kernel error a plugin's `apply` failed with, when that is what it returned (for
    /// example the [`KernelError::DuplicateService`] of a second provider), so a caller can
    /// tell kernel failures apart without matching message text.
    pub fn apply_cause(&self) -> Option<&KernelError> {
        match self {
            KernelError::PluginApply { source, .. } => source.downcast_ref::<KernelError>(),
            _ => None,
        }
    }
}

/// How a scoped task ended without producing its output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was aborted, by [`crate::TaskHandle::abort`] or by the disposal of its scope.
    #[error("task was cancelled before it finished")]
    Cancelled,
    /// The task panicked; the panic was contained and logged.
    #[error("task panicked: {message}")]
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
}

/// What a disposer or listener may return: `()` for infallible ones, or `Result<(), E>` for
/// fallible ones. A failure is contained and logged; it never stops the other disposers or
/// listeners.
///
/// Sealed: these two shapes are the whole contract, so the kernel can rely on them.
///
/// ```compile_fail
/// struct Mine;
/// impl dsh_kernel::Outcome for Mine {
///     fn into_result(self) -> Result<(), dsh_kernel::BoxError> {
///         Ok(())
///     }
/// }
/// ```
pub trait Outcome: sealed::Sealed {
    /// Converts the value into the kernel's uniform result.
    fn into_result(self) -> Result<(), BoxError>;
}

mod sealed {
    /// Only the kernel's two outcome shapes implement [`super::Outcome`].
    pub trait Sealed {}
    impl Sealed for () {}
    impl<E> Sealed for Result<(), E> {}
}

impl Outcome for () {
    fn into_result(self) -> Result<(), BoxError> {
        Ok(())
    }
}

impl<E: Into<BoxError>> Outcome for Result<(), E> {
    fn into_result(self) -> Result<(), BoxError> {
        self.map_err(Into::into)
    }
}
