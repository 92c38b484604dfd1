//! The advisory semantic screen (SPEC section 8.1): prompt, request builder, tolerant
//! parser and field rendering. Behaviours of the reference suite's semantic tests.

use crucible::gate::GateField;
use crucible::gate::semantic::{
    S_RULES, SCREEN_SYSTEM, ScreenOutcome, build_screen_request, fields_to_screen_text,
    parse_screen_response,
};

fn screened(raw: &str) -> (bool, Vec<serde_json::Value>) {
    match parse_screen_response(Some(raw)) {
        ScreenOutcome::Screened { pass, violations } => (pass, violations),
        other => panic!("expected a screened result for {raw:?}, got {other:?}"),
    }
}

#[test]
fn a_clean_pass_has_no_violations() {
    assert_eq!(
        screened(r#"{"pass": true, "violations": []}"#),
        (true, vec![])
    );
}

#[test]
fn json_wrapped_in_prose_is_extracted() {
    let raw = "My reading:\n\n{\"pass\": false, \"violations\": [{\"rule\": \"S2-sarcasm\", \"excerpt\": \"sure it does\"}]}\n\nThat is all.";
    let (pass, violations) = screened(raw);
    assert!(!pass);
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0]["rule"], "S2-sarcasm");
}

#[test]
fn unparseable_answers_are_skipped_not_errors() {
    for raw in [
        Some(""),
        Some("no json here"),
        Some("{not valid json}"),
        Some("} {"),
        None,
    ] {
        let outcome = parse_screen_response(raw);
        assert!(outcome.is_skipped(), "{raw:?} is skipped");
        let ScreenOutcome::Skipped { error } = outcome else {
            unreachable!()
        };
        assert!(!error.is_empty());
    }
}

#[test]
fn a_missing_violations_array_defaults_to_empty() {
    assert_eq!(screened(r#"{"pass": false}"#), (false, vec![]));
    assert_eq!(
        screened(r#"{"pass": false, "violations": "none"}"#),
        (false, vec![])
    );
}

#[test]
fn pass_must_be_literally_true() {
    assert!(!screened(r#"{"pass": "yes", "violations": []}"#).0);
    assert!(!screened(r#"{"pass": 1, "violations": []}"#).0);
    assert!(!screened(r#"{"violations": []}"#).0);
}

#[test]
fn a_bare_array_is_not_a_screen_result() {
    assert!(parse_screen_response(Some("[1,2,3]")).is_skipped());
}

#[test]
fn the_request_carries_the_prompt_and_no_transport_detail() {
    let req = build_screen_request(Some("Grounds: the cited source reports the figure."));
    assert_eq!(req.system, SCREEN_SYSTEM);
    assert_eq!(req.messages.len(), 1);
    assert_eq!(req.messages[0].role, "user");
    assert!(req.messages[0].content.contains("cited source"));
    let json = serde_json::to_string(&req).unwrap();
    for forbidden in ["http", "api_key", "apiKey", "model", "Authorization"] {
        assert!(!json.contains(forbidden), "request mentions {forbidden}");
    }
    assert_eq!(build_screen_request(None).messages[0].content, "");
}

#[test]
fn the_prompt_names_every_screen_rule() {
    assert_eq!(S_RULES.len(), 5);
    for (id, description) in S_RULES {
        assert!(SCREEN_SYSTEM.contains(id), "{id} appears in the prompt");
        assert!(!description.is_empty());
    }
}

#[test]
fn fields_render_as_one_labelled_block() {
    let fields = [
        GateField::new("assertion", "Assertion", "One atomic point."),
        GateField::new("warrant", "Warrant", "The inference license."),
    ];
    assert_eq!(
        fields_to_screen_text(Some(&fields)),
        "Assertion: One atomic point.\n\nWarrant: The inference license."
    );
    assert_eq!(fields_to_screen_text(None), "");
    assert_eq!(fields_to_screen_text(Some(&[])), "");
}
