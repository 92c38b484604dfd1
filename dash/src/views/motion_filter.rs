//! Which motions the motions view shows: filters by debate, outcome, kind, seated
//! arbiter and seated organisation, read from the query string of a plain GET form (no
//! script), combined (a motion must pass every one given), and checked: a value that names
//! nothing (an outcome or kind that does not exist, an unknown debate, arbiter or
//! organisation) is a 400 that names the parameter and what it accepts, never an empty
//! page that looks like "no motions".

use std::collections::BTreeSet;
use std::fmt::Write as _;

use panel_machine::read::query::DebateSummary;
use panel_machine::{Acceptance, MotionKind};
use panel_machine::{Arbiter, Motion, MotionStatus};

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{escape, url_value};
use crate::paging::Paging;

/// Where a motion's panel stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeFilter {
    Open,
    Accepted,
    Deadlocked,
}

impl OutcomeFilter {
    pub const ALL: [OutcomeFilter; 3] = [
        OutcomeFilter::Open,
        OutcomeFilter::Accepted,
        OutcomeFilter::Deadlocked,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OutcomeFilter::Open => "open",
            OutcomeFilter::Accepted => "accepted",
            OutcomeFilter::Deadlocked => "deadlocked",
        }
    }

    fn matches(self, s: &MotionStatus) -> bool {
        matches!(
            (self, s),
            (OutcomeFilter::Open, MotionStatus::Open)
                | (
                    OutcomeFilter::Accepted,
                    MotionStatus::Decided(Acceptance::Accepted { .. })
                )
                | (
                    OutcomeFilter::Deadlocked,
                    MotionStatus::Decided(Acceptance::Deadlocked(_))
                )
        )
    }
}

/// Every motion kind, in the order the form offers them.
pub const KINDS: [MotionKind; 8] = [
    MotionKind::Merge,
    MotionKind::Challenge,
    MotionKind::TierVerification,
    MotionKind::Relevance,
    MotionKind::Steelman,
    MotionKind::Phase,
    MotionKind::Appeal,
    MotionKind::Procedure,
];

/// A kind's name as the form and the query string spell it (`Merge`, `TierVerification`).
pub fn kind_name(k: MotionKind) -> String {
    format!("{k:?}")
}

/// The filters of one motions page, and which page of the motions they pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub debate: Option<String>,
    pub outcome: Option<OutcomeFilter>,
    pub kind: Option<MotionKind>,
    pub arbiter: Option<String>,
    pub organisation: Option<String>,
    /// From 1, the newest.
    pub page: usize,
}

impl Default for Filter {
    fn default() -> Filter {
        Filter {
            debate: None,
            outcome: None,
            kind: None,
            arbiter: None,
            organisation: None,
            page: 1,
        }
    }
}

fn bad(param: &str, value: &str, what: &str) -> DashError {
    DashError::BadRequest(format!("{param}={value} {what}"))
}

impl Filter {
    /// The filters of a query string; an empty value means "any" (what the form sends
    /// for an unset choice), other keys are left to others (`refresh`). An outcome, kind
    /// or page that does not parse is a 400 naming the parameter.
    pub fn parse(q: &str) -> Result<Filter, DashError> {
        let mut f = Filter::default();
        for (k, v) in crate::server::params(q) {
            if v.is_empty() && k != "page" {
                continue;
            }
            match k.as_str() {
                "debate" => f.debate = Some(v),
                "arbiter" => f.arbiter = Some(v),
                "organisation" | "org" => f.organisation = Some(v),
                "outcome" => {
                    let want = v.to_ascii_lowercase();
                    f.outcome = Some(
                        OutcomeFilter::ALL
                            .into_iter()
                            .find(|o| o.name() == want)
                            .ok_or_else(|| {
                                bad(
                                    "outcome",
                                    &v,
                                    "is not an outcome: give open, accepted or deadlocked",
                                )
                            })?,
                    );
                }
                "kind" => {
                    f.kind = Some(
                        KINDS
                            .into_iter()
                            .find(|k| kind_name(*k).eq_ignore_ascii_case(&v))
                            .ok_or_else(|| {
                                let names: Vec<String> = KINDS.into_iter().map(kind_name).collect();
                                bad(
                                    "kind",
                                    &v,
                                    &format!(
                                        "is not a motion kind: give one of {}",
                                        names.join(", ")
                                    ),
                                )
                            })?,
                    );
                }
                "page" => f.page = Paging::parse_number(&v)?,
                _ => {}
            }
        }
        Ok(f)
    }

    /// Whether a filter other than the debate is set (those need a scan of the motions).
    pub fn narrowed(&self) -> bool {
        self.outcome.is_some()
            || self.kind.is_some()
            || self.arbiter.is_some()
            || self.organisation.is_some()
    }

    /// Checks the values that name things on the cluster: an unknown debate, arbiter or
    /// organisation is a 400 saying where the known ones are listed.
    pub fn check(&self, debates: &[DebateSummary], arbiters: &[Arbiter]) -> Result<(), DashError> {
        if let Some(d) = &self.debate
            && !debates.iter().any(|x| &x.id == d)
        {
            return Err(bad(
                "debate",
                d,
                "names no debate on the cluster; /debates lists them",
            ));
        }
        if let Some(a) = &self.arbiter
            && !arbiters.iter().any(|x| &x.registration.arbiter_id == a)
        {
            return Err(bad(
                "arbiter",
                a,
                "names no registered arbiter; /arbiters lists them",
            ));
        }
        if let Some(o) = &self.organisation {
            let orgs = organisations(arbiters);
            if !orgs.contains(o.as_str()) {
                return Err(bad(
                    "organisation",
                    o,
                    &format!(
                        "is no registered arbiter's organisation; they are: {}",
                        orgs.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether `m` passes every filter given.
    pub fn matches(&self, m: &Motion) -> bool {
        self.debate
            .as_ref()
            .is_none_or(|d| m.spec.procedure.is_none() && &m.spec.debate_id == d)
            && self.outcome.is_none_or(|o| o.matches(&m.status))
            && self.kind.is_none_or(|k| m.spec.kind == k)
            && self
                .arbiter
                .as_ref()
                .is_none_or(|a| m.seats.iter().any(|s| &s.arbiter_id == a))
            && self
                .organisation
                .as_ref()
                .is_none_or(|o| m.seats.iter().any(|s| &s.organisation == o))
    }

    /// The filters in words, for the page's summary ("" when none is set).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(d) = &self.debate {
            parts.push(format!("of debate {d}"));
        }
        if let Some(o) = self.outcome {
            parts.push(o.name().to_string());
        }
        if let Some(k) = self.kind {
            parts.push(format!("of kind {}", kind_name(k)));
        }
        if let Some(a) = &self.arbiter {
            parts.push(format!("with {a} seated"));
        }
        if let Some(o) = &self.organisation {
            parts.push(format!("with an arbiter of {o} seated"));
        }
        parts.join(", ")
    }

    /// This filter's address at page `page` (not escaped), keeping the auto-refresh.
    pub fn href(&self, page: usize, chrome: &Chrome) -> String {
        let mut q: Vec<String> = Vec::new();
        let mut add = |k: &str, v: &str| q.push(format!("{k}={}", url_value(v)));
        if let Some(d) = &self.debate {
            add("debate", d);
        }
        if let Some(o) = self.outcome {
            add("outcome", o.name());
        }
        if let Some(k) = self.kind {
            add("kind", &kind_name(k));
        }
        if let Some(a) = &self.arbiter {
            add("arbiter", a);
        }
        if let Some(o) = &self.organisation {
            add("organisation", o);
        }
        if page > 1 {
            add("page", &page.to_string());
        }
        if let Some(secs) = chrome.refresh {
            add("refresh", &secs.to_string());
        }
        let mut s = super::motions::PATH.to_string();
        if !q.is_empty() {
            s.push('?');
            s.push_str(&q.join("&"));
        }
        s
    }

    /// The filter form: one choice per filter, the current ones selected, submitted with
    /// GET to the motions view (a new filter starts at page 1).
    pub fn form(&self, debates: &[DebateSummary], arbiters: &[Arbiter], chrome: &Chrome) -> String {
        let mut s = String::from(
            "<form class=\"filters\" method=\"get\" action=\"/motions\" id=\"filters\">",
        );
        let debate_opts: Vec<(String, String)> = debates
            .iter()
            .map(|d| (d.id.clone(), format!("{} — {}", d.id, short(&d.resolution))))
            .collect();
        s.push_str(&select(
            "debate",
            "debate",
            &debate_opts,
            self.debate.as_deref(),
        ));
        let outcomes: Vec<(String, String)> = OutcomeFilter::ALL
            .into_iter()
            .map(|o| (o.name().to_string(), o.name().to_string()))
            .collect();
        s.push_str(&select(
            "outcome",
            "outcome",
            &outcomes,
            self.outcome.map(|o| o.name()),
        ));
        let kinds: Vec<(String, String)> = KINDS
            .into_iter()
            .map(|k| (kind_name(k), kind_name(k)))
            .collect();
        let kind = self.kind.map(kind_name);
        s.push_str(&select("kind", "kind", &kinds, kind.as_deref()));
        let ids: Vec<(String, String)> = arbiters
            .iter()
            .map(|a| {
                let id = a.registration.arbiter_id.clone();
                (id.clone(), id)
            })
            .collect();
        s.push_str(&select(
            "arbiter",
            "arbiter seated",
            &ids,
            self.arbiter.as_deref(),
        ));
        let orgs: Vec<(String, String)> = organisations(arbiters)
            .into_iter()
            .map(|o| (o.to_string(), o.to_string()))
            .collect();
        s.push_str(&select(
            "organisation",
            "organisation seated",
            &orgs,
            self.organisation.as_deref(),
        ));
        s.push_str(&chrome.hidden_field());
        let clear = Filter::default().href(1, chrome);
        let _ = write!(
            s,
            "<button type=\"submit\">Filter</button><a href=\"{}\">clear filters</a></form>",
            escape(&clear)
        );
        s
    }
}

/// The registered arbiters' organisations.
fn organisations(arbiters: &[Arbiter]) -> BTreeSet<&str> {
    arbiters
        .iter()
        .map(|a| a.registration.organisation.as_str())
        .collect()
}

/// A `<select>` named `name` with an "any" choice first and `(value, text)` choices.
fn select(name: &str, label: &str, opts: &[(String, String)], current: Option<&str>) -> String {
    let mut s = format!("<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    for (value, text) in opts {
        let _ = write!(
            s,
            "<option value=\"{}\"{}>{}</option>",
            escape(value),
            if current == Some(value.as_str()) {
                " selected"
            } else {
                ""
            },
            escape(text)
        );
    }
    s.push_str("</select></label>");
    s
}

/// At most 50 characters of `text`.
fn short(text: &str) -> String {
    if text.chars().count() <= 50 {
        return text.to_string();
    }
    text.chars().take(49).chain(['…']).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_bad_values_name_their_parameter() {
        assert_eq!(Filter::parse("").expect("empty"), Filter::default());
        let f = Filter::parse(
            "debate=deb%5F1&outcome=Deadlocked&kind=merge&arbiter=a&org=north&page=3&refresh=5&x=1",
        )
        .expect("all");
        assert_eq!(
            f,
            Filter {
                debate: Some("deb_1".into()),
                outcome: Some(OutcomeFilter::Deadlocked),
                kind: Some(MotionKind::Merge),
                arbiter: Some("a".into()),
                organisation: Some("north".into()),
                page: 3,
            }
        );
        assert!(f.narrowed());
        assert_eq!(
            f.href(2, &Chrome::default()),
            "/motions?debate=deb_1&outcome=deadlocked&kind=Merge&arbiter=a&organisation=north&page=2"
        );
        let empty = Filter::parse("debate=&outcome=&kind=&arbiter=&organisation=").expect("any");
        assert_eq!(empty, Filter::default());
        assert!(!empty.narrowed());
        for (bad, param) in [
            ("outcome=won", "outcome=won"),
            ("kind=<b>", "kind=<b>"),
            ("page=0", "page=0"),
            ("page=", "page="),
            ("debate=d&page=x", "page=x"),
        ] {
            let e = Filter::parse(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400, "{bad}");
            assert!(e.to_string().starts_with(param), "{bad}: {e}");
        }
        let with_refresh = Chrome::parse("/motions", "refresh=10").expect("chrome");
        assert_eq!(
            Filter::default().href(1, &with_refresh),
            "/motions?refresh=10"
        );
        assert_eq!(
            Filter::default().href(2, &with_refresh),
            "/motions?page=2&refresh=10"
        );
    }
}
