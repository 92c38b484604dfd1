//! The Gate (SPEC section 8): the behaviours of the reference suite's gate tests, then
//! attack and edge cases of the matching semantics (reference digest section 7).

use crucible::gate::{
    self, GateContext, GateField, GateMode, GateRefusal, GateRequest, Kind, RuleId, Violation,
};
use proptest::prelude::*;

fn claim_ctx() -> GateContext {
    GateContext {
        kind: Kind::Claim,
        role: Some("contributor".into()),
        author: Some("contributor".into()),
        side: Some("A".into()),
        type_: Some("empirical".into()),
        qualifier: Some("probable".into()),
        evidence_count: Some(1.0),
        max_tier_weight: Some(3.0),
        ground: None,
    }
}

fn field(name: &str, label: &str, text: &str, argumentative: bool, required: bool) -> GateField {
    GateField {
        name: Some(name.into()),
        label: label.into(),
        text: text.into(),
        argumentative,
        required,
    }
}

fn claim_fields(assertion: &str, grounds: &str, warrant: &str) -> Vec<GateField> {
    vec![
        field("assertion", "Assertion", assertion, true, true),
        field("grounds", "Grounds", grounds, true, true),
        field("warrant", "Warrant", warrant, true, true),
    ]
}

/// One argumentative grounds field under a (modified) claim context, reference mode.
fn one_with(text: &str, edit: impl FnOnce(&mut GateContext)) -> Vec<Violation> {
    let mut ctx = claim_ctx();
    edit(&mut ctx);
    gate::check_with_mode(
        &[field("grounds", "Grounds", text, true, true)],
        &ctx,
        GateMode::Reference,
    )
}

fn hits(text: &str, rule: RuleId) -> Vec<Violation> {
    hits_with(text, rule, |_| {})
}

fn hits_with(text: &str, rule: RuleId, edit: impl FnOnce(&mut GateContext)) -> Vec<Violation> {
    one_with(text, edit)
        .into_iter()
        .filter(|v| v.rule == rule)
        .collect()
}

fn of(v: &[Violation], rule: RuleId) -> usize {
    v.iter().filter(|x| x.rule == rule).count()
}

fn words(n: usize) -> String {
    (0..n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---- Behaviours of the reference suite (test/gate.test.js) ----

#[test]
fn rules_have_ids_names_and_descriptions() {
    let rules = gate::rules();
    assert_eq!(rules.len(), 14);
    for (i, r) in rules.iter().enumerate() {
        assert_eq!(r.id.number() as usize, i + 1);
        assert_eq!(r.id.to_string(), format!("G{}", i + 1));
        assert!(!r.name.is_empty());
        assert!(!r.description.is_empty(), "{} needs a description", r.id);
        assert!(
            !r.description.contains('\u{2014}'),
            "{} has an em dash",
            r.id
        );
    }
}

#[test]
fn compliant_claim_passes_clean() {
    let v = gate::check(
        &claim_fields(
            "Eliminating commutes returns two or more usable hours per week.",
            "The cited survey reports 72 minutes of daily commute time saved.",
            "If saved time is partly reallocated to work then productive hours rise.",
        ),
        &claim_ctx(),
    );
    assert_eq!(v, vec![]);
    assert!(gate::admit(&claim_fields("a", "b", "c"), &claim_ctx()).is_ok());
}

#[test]
fn g1_requires_handle_and_side_but_exempts_arbiters_from_side() {
    assert_eq!(
        of(
            &one_with("text", |c| c.author = Some(String::new())),
            RuleId::G1
        ),
        1
    );
    assert_eq!(of(&one_with("text", |c| c.author = None), RuleId::G1), 1);
    assert_eq!(of(&one_with("text", |c| c.side = None), RuleId::G1), 1);
    let arbiter = one_with("text", |c| {
        c.side = None;
        c.role = Some("arbiter".into());
    });
    assert_eq!(of(&arbiter, RuleId::G1), 0);
    // Observers are not exempt, and lower-case sides are not sides.
    let observer = one_with("text", |c| {
        c.side = None;
        c.role = Some("observer".into());
    });
    assert_eq!(of(&observer, RuleId::G1), 1);
    assert_eq!(
        of(&one_with("text", |c| c.side = Some("a".into())), RuleId::G1),
        1
    );
    let both = one_with("text", |c| {
        c.author = Some(" \u{FEFF}".into());
        c.side = Some("C".into());
    });
    assert_eq!(of(&both, RuleId::G1), 2);
    assert!(
        both.iter()
            .all(|v| v.rule != RuleId::G1 || v.field == "(identity)")
    );
}

#[test]
fn g2_reports_empty_required_fields_once_and_qualifier_for_claims_only() {
    let missing = gate::check(&claim_fields("", "g", "w"), &claim_ctx());
    assert!(
        missing
            .iter()
            .any(|v| v.rule == RuleId::G2 && v.field == "Assertion")
    );
    assert!(missing.iter().all(|v| v.rule != RuleId::G3));

    assert_eq!(
        of(
            &one_with("text", |c| c.qualifier = Some(String::new())),
            RuleId::G2
        ),
        1
    );
    let q = hits_with("text", RuleId::G2, |c| c.qualifier = None);
    assert_eq!(q[0].field, "Qualifier");
    assert_eq!(
        of(
            &one_with("text", |c| {
                c.kind = Kind::Challenge;
                c.qualifier = Some(String::new());
            }),
            RuleId::G2
        ),
        0
    );
}

#[test]
fn g3_limits_are_boundary_exact_and_keyed_by_name() {
    let assertion_of = |n: usize| {
        let v = gate::check(
            &[field("assertion", "Assertion", &words(n), true, true)],
            &claim_ctx(),
        );
        of(&v, RuleId::G3)
    };
    assert_eq!(assertion_of(50), 0);
    assert_eq!(assertion_of(51), 1);
    let v = gate::check(
        &[field("assertion", "Assertion", &words(51), true, true)],
        &claim_ctx(),
    );
    assert_eq!(v[0].excerpt, "51 words (limit 50)");

    let unnamed = gate::check(
        &[field("freeform", "Notes", &words(500), false, false)],
        &claim_ctx(),
    );
    assert_eq!(of(&unnamed, RuleId::G3), 0);
    // Keyed by name, not label, and applied to every kind.
    let mut ctx = claim_ctx();
    ctx.kind = Kind::Response;
    let by_name = gate::check(
        &[field("grounds", "Anything", &words(151), false, false)],
        &ctx,
    );
    assert_eq!(of(&by_name, RuleId::G3), 1);
    let warrant = gate::check(&[field("warrant", "W", &words(81), false, false)], &ctx);
    assert_eq!(of(&warrant, RuleId::G3), 1);
}

#[test]
fn g4_person_directed_language_second_person_and_opponents() {
    assert_eq!(
        hits("The author is a liar about the data.", RuleId::G4).len(),
        1
    );
    assert!(!hits("You are misreading the table.", RuleId::G4).is_empty());
    assert!(!hits("The opponents ignore the fuel cycle.", RuleId::G4).is_empty());
    let v = hits("The author is a liar about the data.", RuleId::G4);
    assert!(v[0].message.contains("\"liar\""));
    assert!(v[0].excerpt.contains("liar"));
}

#[test]
fn g4_word_boundaries_prevent_matches_inside_words() {
    assert!(hits("The liars paradox is a classic puzzle.", RuleId::G4).is_empty());
    assert!(hits("The hackathon produced three prototypes.", RuleId::G4).is_empty());
    assert!(hits("hackathon", RuleId::G4).is_empty());
    assert_eq!(hits("It was a hack job.", RuleId::G4).len(), 1);
}

#[test]
fn g5_and_g9_loaded_vocabulary_and_obviousness() {
    assert_eq!(
        hits("This is an absurd reading of the statute.", RuleId::G5).len(),
        1
    );
    assert_eq!(
        hits("Everyone knows the figure is too low.", RuleId::G9).len(),
        1
    );
    assert_eq!(hits("Obviously the trend continues.", RuleId::G9).len(), 1);
}

#[test]
fn g6_humor_and_pictographs_but_not_arrows_or_operators() {
    assert_eq!(
        hits("That claim is hilarious given the record.", RuleId::G6).len(),
        1
    );
    let emoji = hits("The measurement stands \u{1F600} as reported.", RuleId::G6);
    assert_eq!(emoji.len(), 1);
    assert_eq!(emoji[0].excerpt, "(pictograph)");
    assert!(hits("The chain A \u{2192} B \u{2192} C holds.", RuleId::G6).is_empty());
    assert!(hits("Where x \u{2265} 3 the relation holds.", RuleId::G6).is_empty());
}

#[test]
fn g7_exclamations_caps_and_whitelist() {
    assert_eq!(hits("The figure is wrong!", RuleId::G7).len(), 1);
    assert_eq!(
        hits("This is COMPLETELY unsupported by the data.", RuleId::G7).len(),
        1
    );
    assert!(hits("The NASA dataset covers the period.", RuleId::G7).is_empty());
}

#[test]
fn g7_reports_only_the_first_caps_word() {
    let v = hits(
        "The FIRST and SECOND and THIRD tables disagree.",
        RuleId::G7,
    );
    assert_eq!(v.len(), 1);
    assert!(v[0].message.contains("FIRST"));
}

#[test]
fn g8_question_marks_only_in_argumentative_fields() {
    assert_eq!(
        hits("Why would anyone accept that reading?", RuleId::G8).len(),
        1
    );
    let note = gate::check(
        &[field("note", "Note", "Is this right?", false, false)],
        &claim_ctx(),
    );
    assert_eq!(of(&note, RuleId::G8), 0);
}

#[test]
fn g10_unnamed_authority_needs_a_citation() {
    let text = "Studies show the effect persists.";
    assert_eq!(
        hits_with(text, RuleId::G10, |c| c.evidence_count = Some(0.0)).len(),
        1
    );
    assert_eq!(
        hits_with(text, RuleId::G10, |c| c.evidence_count = None).len(),
        1
    );
    assert_eq!(
        hits_with(text, RuleId::G10, |c| c.evidence_count = Some(-1.0)).len(),
        1
    );
    assert!(hits_with(text, RuleId::G10, |c| c.evidence_count = Some(1.0)).is_empty());
}

#[test]
fn g11_citation_requirements_per_kind() {
    let uncited = |edit: &dyn Fn(&mut GateContext)| {
        let mut ctx = claim_ctx();
        ctx.evidence_count = Some(0.0);
        edit(&mut ctx);
        of(
            &gate::check(
                &[field("text", "Argument", "A source exists.", true, false)],
                &ctx,
            ),
            RuleId::G11,
        )
    };
    assert_eq!(uncited(&|_| {}), 1);
    assert_eq!(uncited(&|c| c.type_ = Some("logical".into())), 0);
    for (ground, want) in [
        ("evidence-validity", 1),
        ("counter-evidence", 1),
        ("warrant-failure", 0),
        ("relevance", 0),
    ] {
        let n = uncited(&|c| {
            c.kind = Kind::Challenge;
            c.ground = Some(ground.into());
            c.qualifier = None;
        });
        assert_eq!(n, want, "challenge ground {ground}");
    }
    for (ground, want) in [("A1", 1), ("A2", 0), ("A3", 1)] {
        let n = uncited(&|c| {
            c.kind = Kind::Appeal;
            c.ground = Some(ground.into());
            c.qualifier = None;
        });
        assert_eq!(n, want, "appeal ground {ground}");
    }
    let v = one_with("x", |c| c.evidence_count = Some(0.0));
    assert_eq!(
        v.iter()
            .find(|v| v.rule == RuleId::G11)
            .map(|v| v.field.as_str()),
        Some("Evidence")
    );
}

#[test]
fn g12_certainty_needs_certain_qualifier_and_top_tier() {
    let text = "The dataset proves the mechanism.";
    let n = |edit: &dyn Fn(&mut GateContext)| hits_with(text, RuleId::G12, edit).len();
    assert_eq!(
        n(&|c| {
            c.qualifier = Some("probable".into());
            c.max_tier_weight = Some(5.0);
        }),
        1
    );
    assert_eq!(
        n(&|c| {
            c.qualifier = Some("certain".into());
            c.max_tier_weight = Some(4.0);
        }),
        1,
        "tier 4 evidence does not license certainty"
    );
    assert_eq!(
        n(&|c| {
            c.qualifier = Some("certain".into());
            c.max_tier_weight = Some(5.0);
        }),
        0
    );
    assert_eq!(
        n(&|c| {
            c.qualifier = Some("certain".into());
            c.type_ = Some("logical".into());
            c.max_tier_weight = Some(0.0);
        }),
        0,
        "non-empirical claims skip the tier condition"
    );
    // A challenge has no qualifier, so certainty wording is flagged there too.
    assert_eq!(
        n(&|c| {
            c.kind = Kind::Challenge;
            c.qualifier = None;
        }),
        1
    );
}

#[test]
fn g13_challenges_need_exactly_one_enumerated_ground() {
    let with = |ground: Option<&str>| {
        let mut ctx = claim_ctx();
        ctx.kind = Kind::Challenge;
        ctx.qualifier = None;
        ctx.ground = ground.map(Into::into);
        of(
            &gate::check(
                &[field(
                    "text",
                    "Argument",
                    "The inference fails.",
                    true,
                    false,
                )],
                &ctx,
            ),
            RuleId::G13,
        )
    };
    assert_eq!(with(Some("warrant-failure")), 0);
    assert_eq!(with(Some("vibes")), 1);
    assert_eq!(with(None), 1);
    assert_eq!(with(Some("Warrant failure")), 1, "labels are not keys");
    assert_eq!(with(Some("")), 1);
}

#[test]
fn g14_distancing_markers_in_steelmans_only() {
    let steelman = |text: &str| {
        let mut ctx = claim_ctx();
        ctx.kind = Kind::Steelman;
        ctx.qualifier = None;
        of(
            &gate::check(&[field("steelman", "Steelman", text, false, false)], &ctx),
            RuleId::G14,
        )
    };
    assert_eq!(steelman("The negative case supposedly rests on cost."), 1);
    assert_eq!(
        steelman("The negative case rests on cost per unit of abatement."),
        0
    );
    assert_eq!(steelman("The so-called baseline is contested."), 1);
    assert!(hits("The claim supposedly rests on cost.", RuleId::G14).is_empty());
}

#[test]
fn a_submission_breaking_many_rules_reports_each_with_a_fix() {
    let mut ctx = claim_ctx();
    ctx.evidence_count = Some(0.0);
    ctx.max_tier_weight = Some(0.0);
    let fields = claim_fields(
        "Everyone knows this is obviously an absurd position!",
        "Studies show the author is a liar. LOL, why even argue?",
        "It proves the point COMPLETELY.",
    );
    for mode in [GateMode::Reference, GateMode::Acronyms] {
        let v = gate::check_with_mode(&fields, &ctx, mode);
        assert_eq!(
            gate::violated_rules(&v),
            vec![
                RuleId::G4,
                RuleId::G5,
                RuleId::G6,
                RuleId::G7,
                RuleId::G8,
                RuleId::G9,
                RuleId::G10,
                RuleId::G11,
                RuleId::G12
            ]
        );
        for x in &v {
            assert!(
                !x.fix.is_empty() && !x.message.is_empty(),
                "{} explains itself",
                x.rule
            );
        }
    }
    let refusal = gate::admit(&fields, &ctx).unwrap_err();
    assert_eq!(refusal.rule_ids().len(), 9);
    assert!(refusal.to_string().contains("G4, G5"));
}

#[test]
fn check_tolerates_missing_arguments() {
    assert_eq!(
        gate::check(&[], &GateContext::default()).len(),
        2,
        "G1 twice, nothing else"
    );
    let empty = GateRequest::from_json("{}").unwrap();
    assert!(empty.fields.is_empty());
    assert_eq!(empty.ctx, GateContext::default());
}

// ---- Order, shape and serialisation ----

#[test]
fn reports_are_in_rule_then_field_then_lexicon_order() {
    let fields = vec![
        field("a", "First", "garbage and a liar and an idiot", true, false),
        field("b", "Second", "a fool, wicked", true, false),
    ];
    let v = gate::check(&fields, &claim_ctx());
    let got: Vec<(String, String)> = v
        .iter()
        .map(|x| (x.rule.to_string(), x.field.clone()))
        .collect();
    let want = [
        ("G4", "First"),
        ("G4", "First"),
        ("G4", "Second"),
        ("G5", "First"),
        ("G5", "Second"),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    // Lexicon order, not text order: "liar" precedes "idiot" in the list.
    assert!(v[0].message.contains("liar") && v[1].message.contains("idiot"));
}

#[test]
fn violation_serialises_with_reference_keys() {
    let v = hits("It is wrong!", RuleId::G7);
    let json = serde_json::to_value(&v[0]).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["rule", "ruleName", "field", "excerpt", "message", "fix"]
    );
    assert_eq!(json["rule"], "G7");
    assert_eq!(json["ruleName"], "Formal register");
}

#[test]
fn context_deserialises_from_the_reference_shape() {
    let ctx: GateContext = serde_json::from_str(
        r#"{"kind":"mystery","type":"empirical","evidenceCount":2,"maxTierWeight":5,"ground":["relevance"],"side":null}"#,
    )
    .unwrap();
    assert_eq!(ctx.kind, Kind::Other("mystery".into()));
    assert_eq!(ctx.type_.as_deref(), Some("empirical"));
    assert_eq!(ctx.evidence_count, Some(2.0));
    assert_eq!(ctx.ground, None, "a non-string ground matches no key");
    assert_eq!(ctx.side, None);
    let f: GateField = serde_json::from_str(r#"{"label":"L","text":null}"#).unwrap();
    assert_eq!(f.text, "");
    assert!(!f.argumentative);
}

// ---- Attack and edge cases of the matching semantics ----

#[test]
fn lexicon_boundaries_are_ascii_alphanumerics_only() {
    for text in [
        "a liar_ here",
        "liaré",
        "a hack-job",
        "\u{2019}liar\u{2019}",
        "liar.",
        "LIAR",
    ] {
        assert_eq!(hits(text, RuleId::G4).len(), 1, "{text:?} matches");
    }
    for text in ["liars", "hackathon", "liar1", "2liar", "xliar"] {
        assert!(hits(text, RuleId::G4).is_empty(), "{text:?} does not match");
    }
    assert!(hits("lolly pops", RuleId::G6).is_empty());
    assert!(hits("an 1100% rise", RuleId::G12).is_empty());
    assert_eq!(hits("a 100% rise", RuleId::G12).len(), 1);
    // One hit per phrase per field, however often it occurs.
    assert_eq!(hits("liar liar liar", RuleId::G4).len(), 1);
}

#[test]
fn lexicon_match_uses_javascript_lower_casing() {
    // The Kelvin sign lower-cases to k, so it completes "knows".
    let v = hits("Everyone \u{212A}nows this.", RuleId::G9);
    assert_eq!(v.len(), 1);
    assert!(v[0].message.contains("Everyone \u{212A}nows"));
    // A dotted capital I lower-cases to two units and shifts later offsets; the hit
    // is then read from the original text at the shifted offset, as the reference does.
    let v = hits("\u{130} say the liar", RuleId::G4);
    assert_eq!(v.len(), 1);
    assert!(v[0].message.contains("\"iar\""), "{}", v[0].message);
    assert_eq!(v[0].excerpt, "\u{130} say the liar");
}

#[test]
fn excerpt_is_thirty_units_each_side_of_the_first_occurrence() {
    let text = format!("{} liars and a liar {}", "p".repeat(40), "q".repeat(40));
    let v = hits(&text, RuleId::G4);
    assert_eq!(v.len(), 1);
    // The excerpt centres on the first occurrence ("liars"), without a boundary test.
    assert_eq!(
        v[0].excerpt,
        format!(
            "...{} liars and a liar {}...",
            "p".repeat(29),
            "q".repeat(17)
        )
    );
}

#[test]
fn second_person_pattern_needs_whitespace_and_word_boundaries() {
    assert!(!hits("You were told the date.", RuleId::G4).is_empty());
    assert!(!hits("you 're mistaken", RuleId::G4).is_empty());
    assert!(!hits("YOU\u{A0}ARE mistaken", RuleId::G4).is_empty());
    assert!(!hits("you\u{FEFF}are mistaken", RuleId::G4).is_empty());
    assert!(hits("you're mistaken", RuleId::G4).is_empty());
    assert!(hits("you\u{85}are mistaken", RuleId::G4).is_empty());
    assert!(hits("you\u{200B}are mistaken", RuleId::G4).is_empty());
    assert!(hits("you are_ mistaken", RuleId::G4).is_empty());
    assert!(hits("bayou are deltas", RuleId::G4).is_empty());
    let opp = hits("The opponent's table.", RuleId::G4);
    assert!(opp[0].message.contains("\"opponent's\""));
    let plural = hits("opponents's", RuleId::G4);
    assert!(plural[0].message.contains("\"opponents's\""));
    let backtrack = hits("opponent'sx", RuleId::G4);
    assert!(backtrack[0].message.contains("\"opponent\""));
    assert!(hits("opponentsx", RuleId::G4).is_empty());
    // At most one pattern report per field.
    assert_eq!(hits("you are and you were; opponents", RuleId::G4).len(), 1);
}

#[test]
fn caps_in_reference_mode_follow_ascii_word_boundaries() {
    let caps = |t: &str| hits(t, RuleId::G7);
    assert_eq!(caps("The COVID-19 figures.").len(), 1);
    assert!(caps("The COVID19 figures.").is_empty());
    assert!(caps("ABCD_EF and IEEE754 and OECD-wide").is_empty());
    assert!(caps("\u{C9}TATS")[0].message.contains("\"TATS\""));
    assert!(caps("NATO NOTED it")[0].message.contains("\"NOTED\""));
    assert_eq!(caps("NASAS archive").len(), 1, "whitelist match is exact");
    assert_eq!(caps("PRISMA and GCSE").len(), 1);
    assert!(
        caps("The WHO and the FDA.").is_empty(),
        "three letters never count"
    );
    assert!(caps("Fullwidth \u{FF01} is not an exclamation mark.").is_empty());
}

#[test]
fn g3_counts_words_with_javascript_whitespace() {
    let count = |sep: &str| {
        let text = (0..51)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(sep);
        of(
            &gate::check(&[field("assertion", "A", &text, true, true)], &claim_ctx()),
            RuleId::G3,
        )
    };
    assert_eq!(count("\u{FEFF}"), 1, "U+FEFF separates words");
    assert_eq!(count("\u{3000}"), 1);
    assert_eq!(count("\u{85}"), 0, "U+0085 does not: one long word");
    assert_eq!(count("\u{200B}"), 0);
    let padded = format!("\u{FEFF} {} \u{FEFF}", words(50));
    let v = gate::check(
        &[field("assertion", "A", &padded, true, true)],
        &claim_ctx(),
    );
    assert_eq!(of(&v, RuleId::G3), 0, "trimming removes U+FEFF");
}

#[test]
fn blank_fields_skip_per_field_rules() {
    for blank in ["", "   ", "\u{FEFF}", "\u{3000}\n\t", "\u{2028}"] {
        let v = gate::check(&claim_fields(blank, "fine", "fine"), &claim_ctx());
        assert_eq!(of(&v, RuleId::G2), 1, "{blank:?} is blank");
        assert!(v.iter().all(|x| x.rule == RuleId::G2));
    }
    // U+0085 and U+200B are not whitespace to JavaScript, so the field is not blank.
    let v = gate::check(&claim_fields("\u{85}", "fine", "fine"), &claim_ctx());
    assert_eq!(of(&v, RuleId::G2), 0);
}

#[test]
fn pictographs_versus_arrows_and_operators() {
    for p in [
        "\u{2600}",
        "\u{2764}\u{FE0F}",
        "\u{FE0F}",
        "\u{1F000}",
        "\u{1FAFF}",
        "\u{27BF}",
    ] {
        assert_eq!(hits(&format!("x {p} y"), RuleId::G6).len(), 1, "{p:?}");
    }
    for p in [
        "\u{2190}",
        "\u{21FF}",
        "\u{2200}",
        "\u{22FF}",
        "\u{27C0}",
        "\u{1FB00}",
        "\u{25A0}",
    ] {
        assert!(hits(&format!("x {p} y"), RuleId::G6).is_empty(), "{p:?}");
    }
}

#[test]
fn acronym_mode_differs_from_reference_only_in_g7() {
    let ctx = claim_ctx();
    let fields = claim_fields(
        "The PRISMA checklist and GCSE grades were reviewed.",
        "SMART targets and HIPAA rules apply; COVID-19 figures are cited.",
        "THIS IS WRONG.",
    );
    let ours = gate::check(&fields, &ctx);
    let reference = gate::check_with_mode(&fields, &ctx, GateMode::Reference);
    let g7 = |v: &[Violation]| {
        v.iter()
            .filter(|x| x.rule == RuleId::G7)
            .map(|x| x.field.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(g7(&reference), ["Assertion", "Grounds", "Warrant"]);
    assert_eq!(g7(&ours), ["Warrant"]);
    assert!(ours.iter().all(|x| x.rule == RuleId::G7));
}

#[test]
fn acronym_defined_in_another_field_passes_in_our_mode() {
    let fields = claim_fields(
        "The QRTI score improved after the change.",
        "The Quality Reporting Tool Index (QRTI) is published annually.",
        "If the index rose then reporting improved.",
    );
    assert!(gate::check(&fields, &claim_ctx()).is_empty());
    let reference = gate::check_with_mode(&fields, &claim_ctx(), GateMode::Reference);
    assert_eq!(of(&reference, RuleId::G7), 2);
    // An undefined, unknown token is still refused, and so is a sham definition.
    let sham = claim_fields("It is NEVER so.", "NEVER (never) changes.", "w");
    assert_eq!(of(&gate::check(&sham, &claim_ctx()), RuleId::G7), 2);
}

#[test]
fn refusal_is_a_typed_error() {
    let err: GateRefusal =
        gate::admit(&claim_fields("You are a liar!", "g", "w"), &claim_ctx()).expect_err("refused");
    let as_error: &dyn std::error::Error = &err;
    assert!(
        as_error
            .to_string()
            .starts_with("the Gate refused the submission")
    );
    assert_eq!(err.rule_ids(), vec![RuleId::G4, RuleId::G7]);
}

// ---- Malformed requests name the bad value ----

#[test]
fn malformed_requests_name_the_json_path() {
    let err = |s: &str| GateRequest::from_json(s).unwrap_err().to_string();
    assert_eq!(
        err(r#"{"fields":[{"label":"A","text":"x"},{"label":"B","text":7}]}"#),
        "fields[1].text: expected a string, found a number"
    );
    assert_eq!(
        err(r#"{"fields":{}}"#),
        "fields: expected an array, found an object"
    );
    assert_eq!(
        err(r#"{"fields":[3]}"#),
        "fields[0]: expected an object, found a number"
    );
    assert_eq!(
        err(r#"{"ctx":{"evidenceCount":"1"}}"#),
        "ctx.evidenceCount: expected a number, found a string"
    );
    assert_eq!(
        err(r#"{"fields":[{"required":"yes"}]}"#),
        "fields[0].required: expected a boolean, found a string"
    );
    assert!(err("[1,2]").starts_with("(request): expected an object"));
    assert!(err("{\"fields\": [").starts_with("not valid JSON"));
}

#[test]
fn lone_surrogate_escapes_are_read_as_replacement_characters() {
    let r = GateRequest::from_json(r#"{"fields":[{"label":"L","text":"a \ud83d liar \ude00"}]}"#)
        .unwrap();
    assert_eq!(r.fields[0].text, "a \u{FFFD} liar \u{FFFD}");
    let pair =
        GateRequest::from_json(r#"{"fields":[{"label":"L","text":"\ud83d\ude00"}]}"#).unwrap();
    assert_eq!(pair.fields[0].text, "\u{1F600}");
    let escaped = GateRequest::from_json(r#"{"fields":[{"label":"L","text":"\\ud83d"}]}"#).unwrap();
    assert_eq!(escaped.fields[0].text, "\\ud83d");
}

// ---- Robustness ----

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn check_never_panics(
        texts in proptest::collection::vec(any::<String>(), 0..4),
        names in proptest::collection::vec(proptest::option::of("assertion|grounds|warrant|[a-z]{0,6}"), 4),
        author in proptest::option::of(any::<String>()),
        side in proptest::option::of("A|B|[A-Za-z]{0,2}"),
        kind in "claim|challenge|response|steelman|appeal|definition|.{0,5}",
        ground in proptest::option::of(any::<String>()),
        evidence in proptest::option::of(-3.0f64..10.0),
        tier in proptest::option::of(-1.0f64..7.0),
    ) {
        let fields: Vec<GateField> = texts
            .iter()
            .zip(names.iter())
            .map(|(t, n)| GateField { name: n.clone(), label: "L".into(), text: t.clone(), argumentative: true, required: true })
            .collect();
        let ctx = GateContext {
            kind: Kind::parse(&kind),
            author,
            side,
            role: None,
            type_: Some("empirical".into()),
            qualifier: Some("certain".into()),
            evidence_count: evidence,
            max_tier_weight: tier,
            ground,
        };
        for mode in [GateMode::Acronyms, GateMode::Reference] {
            let v = gate::check_with_mode(&fields, &ctx, mode);
            // Rule order is non-decreasing.
            prop_assert!(v.windows(2).all(|w| w[0].rule <= w[1].rule));
        }
    }

    #[test]
    fn adversarial_texts_never_panic(text in "[ \\u{130}\\u{212A}a-zA-Z'!?\\u{1F600}\\u{FEFF}_()-]{0,80}") {
        let fields = [GateField { name: Some("assertion".into()), label: "A".into(), text, argumentative: true, required: true }];
        for mode in [GateMode::Acronyms, GateMode::Reference] {
            let _ = gate::check_with_mode(&fields, &claim_ctx(), mode);
        }
    }

    #[test]
    fn request_parsing_never_panics(raw in ".{0,200}") {
        let _ = GateRequest::from_json(&raw);
    }
}
