//! Input schemas the model API takes.

use serde_json::Value;

/// The schema to offer for a tool's `input`: an object schema as it is (`"type": "object"`
/// added when absent), or why the model API would refuse it.
pub fn checked_schema(input: &Value) -> Result<Value, String> {
    let Value::Object(map) = input else {
        return Err(format!("its input schema is not a JSON object: {input}"));
    };
    match map.get("type") {
        None => {
            let mut map = map.clone();
            map.insert("type".into(), Value::String("object".into()));
            Ok(Value::Object(map))
        }
        Some(Value::String(kind)) if kind == "object" => {
            if map.get("properties").is_some_and(|p| !p.is_object()) {
                return Err("its `properties` is not an object".into());
            }
            Ok(input.clone())
        }
        Some(other) => Err(format!(
            "its input schema has type {other}, and a tool's arguments must be an object"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_schemas_pass_and_others_say_why_not() {
        assert_eq!(
            checked_schema(&json!({"properties": {}})).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        let ok = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(checked_schema(&ok).unwrap(), ok);
        for (bad, why) in [
            (json!("string"), "not a JSON object"),
            (json!({"type": "array"}), "must be an object"),
            (
                json!({"type": "object", "properties": []}),
                "`properties` is not an object",
            ),
        ] {
            assert!(checked_schema(&bad).unwrap_err().contains(why), "{bad}");
        }
    }
}
