//! Configuration: flag over environment over file over default, a strict file reported with
//! `file:line:col`, and `dsh config` showing every value's source but never the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};

fn write(sandbox: &Sandbox, body: &str) -> String {
    let path = sandbox.root.path().join("config.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

#[test]
fn each_value_comes_from_the_strongest_source_and_says_which() {
    let sandbox = Sandbox::new();
    let file = write(
        &sandbox,
        "model = \"from-file\"\nmax_steps = 7\n[http]\nidle_timeout_secs = 30\n",
    );
    let out = sandbox
        .dsh([
            "--config",
            &file,
            "--base-url",
            "https://api.deepseek.com",
            "config",
        ])
        .env("DSH_MAX_STEPS", "9")
        .env("DEEPSEEK_API_KEY", "sk-secret-value")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for line in [
        format!("model = \"from-file\"  # file {file}:1"),
        "max_steps = 9  # env DSH_MAX_STEPS".to_owned(),
        "base_url = \"https://api.deepseek.com\"  # flag --base-url".to_owned(),
        format!("http.idle_timeout_secs = 30  # file {file}:4"),
        "http.max_retries = 4  # default".to_owned(),
        "api_key = <set, 15 chars>  # env DEEPSEEK_API_KEY".to_owned(),
        format!("config_file = {file} (present)"),
    ] {
        assert!(shown.contains(&line), "{line:?} in:\n{shown}");
    }
    assert!(!shown.contains("sk-secret-value"));
    let json = sandbox
        .dsh(["--config", &file, "config", "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["model"]["value"], "from-file");
    assert_eq!(value["model"]["source"], format!("file {file}:1"));
}

#[test]
fn a_bad_file_is_refused_with_its_position_and_nothing_is_created() {
    let sandbox = Sandbox::new();
    let cases = [
        ("model = \"x\"\nbogus = 1\n", ":2:1: unknown field `bogus`"),
        (
            "api_key = \"sk-1\"\n",
            "dsh does not read API keys from the config file; set DEEPSEEK_API_KEY",
        ),
        (
            "[http]\nmax_retries = 99\n",
            ":2:15: max_retries must be 0 to 10",
        ),
        ("max_steps = \"many\"\n", ":1:13: invalid type"),
        ("model = \n", ":1:"),
        (
            "[http.headers]\n\"bad header\" = \"v\"\n",
            "is not a valid HTTP header",
        ),
    ];
    for (body, says) in cases {
        let file = write(&sandbox, body);
        let out = sandbox
            .dsh(["--config", &file, "run", "--replay", "demo", "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(6), "{body:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&file) && stderr.contains(says),
            "{body:?}: {stderr}"
        );
        assert!(!sandbox.data().exists(), "{body:?}: nothing created");
    }
}

#[test]
fn a_named_file_must_exist_and_the_default_one_may_be_absent() {
    let sandbox = Sandbox::new();
    let missing = sandbox
        .dsh(["--config", "/nonexistent/dsh.toml", "config"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(6));
    let named = sandbox
        .dsh(["config"])
        .env("DSH_CONFIG", "/nonexistent/dsh.toml")
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(6));
    let default = sandbox.dsh(["config"]).output().unwrap();
    assert_eq!(default.status.code(), Some(0));
    assert!(text(&default.stdout).contains("config.toml (not present)"));
}

#[test]
fn the_default_file_location_follows_xdg() {
    let sandbox = Sandbox::new();
    let xdg = sandbox.root.path().join("xdg");
    std::fs::create_dir_all(xdg.join("dsh")).unwrap();
    std::fs::write(xdg.join("dsh/config.toml"), "model = \"xdg-model\"\n").unwrap();
    let out = sandbox
        .dsh(["config"])
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("model = \"xdg-model\""),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn invalid_environment_values_name_the_variable() {
    let sandbox = Sandbox::new();
    for (var, value) in [
        ("DSH_MAX_STEPS", "0"),
        ("DSH_REASONING", "hard"),
        ("DSH_TEMPERATURE", "9"),
    ] {
        let out = sandbox.dsh(["config"]).env(var, value).output().unwrap();
        assert_eq!(out.status.code(), Some(6), "{var}");
        assert!(
            text(&out.stderr).contains(var),
            "{var}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn an_empty_api_key_env_lets_a_keyless_server_on_the_network_be_used() {
    let sandbox = Sandbox::new();
    let file = write(
        &sandbox,
        "api_key_env = \"\"\nbase_url = \"http://10.255.255.1:9/v1\"\n",
    );
    let out = sandbox.dsh(["--config", &file, "config"]).output().unwrap();
    assert!(
        text(&out.stdout).contains("api_key = <not needed>"),
        "{}",
        text(&out.stdout)
    );
}
