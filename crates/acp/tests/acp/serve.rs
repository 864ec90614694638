//! Building the bridge: missing services and bad settings are refused before any byte is
//! read. (Serving is tested end to end against the built binary in `tests/`.)

use dsh_acp::{AcpBridge, AcpConfig, AcpError};
use dsh_kernel::Runtime;

#[tokio::test]
async fn a_scope_without_the_agent_services_is_refused_before_any_byte_is_read() {
    let runtime = Runtime::new();
    match AcpBridge::new(runtime.scope(), AcpConfig::default()) {
        Err(AcpError::MissingService(name)) => assert_eq!(name, "AgentRegistry"),
        other => panic!("{:?}", other.err()),
    }
    let bad = AcpConfig {
        max_line_bytes: 0,
        ..AcpConfig::default()
    };
    assert!(matches!(
        AcpBridge::new(runtime.scope(), bad),
        Err(AcpError::InvalidConfig(_))
    ));
    runtime.shutdown().await;
}
