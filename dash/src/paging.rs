//! Long lists a page at a time, newest first: the page number comes from the query
//! string (`page=N`, from 1), is checked (a bad one is a 400 naming the parameter), and
//! every paged list ends with previous/next links and page numbers. Pages are bounded so
//! a long history never makes one huge page.

use std::fmt::Write as _;
use std::ops::Range;

use crate::error::DashError;
use crate::html::escape;

/// The highest page number accepted (a bound on the arithmetic, far past any real list).
pub const MAX_PAGE: usize = 1_000_000;

/// One page of a list of `size` items a page, `number` counting from 1 (the newest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub number: usize,
    pub size: usize,
}

impl Paging {
    /// Page 1 of lists `size` a page.
    pub fn first(size: usize) -> Paging {
        Paging {
            number: 1,
            size: size.max(1),
        }
    }

    /// The page a `page=` value names: a whole number from 1 to [`MAX_PAGE`], else a 400.
    pub fn parse_number(value: &str) -> Result<usize, DashError> {
        value
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                DashError::BadRequest(format!(
                    "page={} is not a page number: pages count from 1 (the newest) up to {MAX_PAGE}",
                    quoted(value)
                ))
            })
    }

    /// How many pages `len` items fill (one, empty, for none).
    pub fn pages(&self, len: usize) -> usize {
        len.div_ceil(self.size).max(1)
    }

    /// The items of this page as a range of indices into a list of `len` kept oldest
    /// first: the last `size` on page 1, the `size` before them on page 2, ... A page past
    /// the last is a 400 naming `page` and how many pages there are.
    pub fn window(&self, len: usize) -> Result<Range<usize>, DashError> {
        if self.number > self.pages(len) {
            return Err(DashError::BadRequest(format!(
                "page={} is past the last page: {len} item(s) fill {} page(s) of {}",
                self.number,
                self.pages(len),
                self.size
            )));
        }
        let newer = (self.number - 1) * self.size;
        let end = len - newer;
        Ok(end.saturating_sub(self.size)..end)
    }

    /// "previous · 1 … 4 5 6 … 12 · next" for a list of `len` items, each page linked by
    /// `href(n)` (not yet escaped); nothing when everything fits on one page.
    pub fn nav(&self, len: usize, href: impl Fn(usize) -> String) -> String {
        let pages = self.pages(len);
        if pages <= 1 {
            return String::new();
        }
        let n = self.number;
        let a = |page: usize, text: &str| format!("<a href=\"{}\">{text}</a>", escape(&href(page)));
        let mut s = String::from("<nav class=\"pager\">");
        if n > 1 {
            s.push_str(&a(n - 1, "« previous (newer)"));
        }
        let mut last = 0;
        for p in 1..=pages {
            if p != 1 && p != pages && p.abs_diff(n) > 2 {
                continue;
            }
            if p > last + 1 {
                s.push_str("<span>…</span>");
            }
            if p == n {
                let _ = write!(s, "<b>page {p} of {pages}</b>");
            } else {
                s.push_str(&a(p, &p.to_string()));
            }
            last = p;
        }
        if n < pages {
            s.push_str(&a(n + 1, "next (older) »"));
        }
        s.push_str("</nav>");
        s
    }
}

/// At most 40 characters of a value a request sent, for a message that quotes it.
fn quoted(value: &str) -> String {
    let v = crate::server::decoded(value);
    if v.chars().count() <= 40 {
        return v;
    }
    v.chars().take(39).chain(['…']).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_newest_first_and_checked() {
        let p = |number| Paging { number, size: 20 };
        assert_eq!(p(1).window(45).expect("1"), 25..45);
        assert_eq!(p(2).window(45).expect("2"), 5..25);
        assert_eq!(p(3).window(45).expect("3"), 0..5);
        assert_eq!(p(1).window(0).expect("empty"), 0..0);
        let e = p(4).window(45).expect_err("past the end");
        assert_eq!(e.status().as_u16(), 400);
        assert!(
            e.to_string()
                .contains("page=4 is past the last page: 45 item(s) fill 3 page(s) of 20")
        );
        assert_eq!(p(1).pages(40), 2);
        for bad in ["0", "-1", "x", "", "1000001", "1.5"] {
            let e = Paging::parse_number(bad).expect_err(bad);
            assert_eq!(e.status().as_u16(), 400);
            assert!(e.to_string().starts_with("page="), "{e}");
        }
        assert_eq!(Paging::parse_number("7").expect("7"), 7);
    }

    #[test]
    fn the_pager_links_neighbours_and_ends() {
        let href = |n: usize| format!("/motions?x=1&page={n}");
        assert_eq!(Paging::first(20).nav(20, href), "");
        let nav = Paging {
            number: 6,
            size: 10,
        }
        .nav(120, href);
        assert!(
            nav.contains("<a href=\"/motions?x=1&amp;page=5\">« previous (newer)</a>"),
            "{nav}"
        );
        assert!(nav.contains("<a href=\"/motions?x=1&amp;page=7\">next (older) »</a>"));
        assert!(nav.contains("<b>page 6 of 12</b>"));
        assert!(
            nav.contains("page=1\">1</a><span>…</span><a href=\"/motions?x=1&amp;page=4\">4</a>")
        );
        assert!(
            nav.contains("page=8\">8</a><span>…</span><a href=\"/motions?x=1&amp;page=12\">12</a>")
        );
        let first = Paging::first(10).nav(30, href);
        assert!(!first.contains("previous") && first.contains("next (older)"));
    }
}
