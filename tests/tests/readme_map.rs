//! The README's map is a product of the house: its crate table is each workspace member
//! with the first sentence of its crate docs, and its command table is `panel --help`'s
//! command list, both exactly. When a crate or command changes, this test fails and
//! prints the block to paste between the README's markers.

use std::path::{Path, PathBuf};

use panel_tests::panel;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The workspace members, in `Cargo.toml`'s order.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The first sentence of a crate's docs: its `lib.rs` (or `main.rs`) opening `//!`
/// paragraph up to the first full stop that ends a sentence.
fn summary(root: &Path, member: &str) -> String {
    let src = root.join(member).join("src");
    let file = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{member} has neither src/lib.rs nor src/main.rs"));
    let text = std::fs::read_to_string(&file).expect("crate root");
    let paragraph: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .take_while(|l| !l.is_empty())
        .collect();
    let joined = paragraph.join(" ");
    assert!(
        !joined.is_empty(),
        "{member}'s crate root opens with no //! docs"
    );
    match joined.find(". ") {
        Some(i) => joined[..=i].to_owned(),
        None => joined,
    }
}

fn crate_table(root: &Path) -> String {
    let mut t =
        String::from("| folder | what it is (its crate docs' first sentence) |\n|---|---|\n");
    for m in members(root) {
        t.push_str(&format!(
            "| `{m}/` | {} |\n",
            summary(root, &m).replace('|', "\\|")
        ));
    }
    t
}

/// `panel --help`'s commands: (name, about).
fn commands() -> Vec<(String, String)> {
    let out = panel().arg("--help").output().expect("panel --help");
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).expect("utf-8 help");
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let l = l.trim();
            let (name, about) = l.split_once(' ')?;
            (name != "help").then(|| (name.to_owned(), about.trim().to_owned()))
        })
        .collect()
}

fn command_table() -> String {
    let mut t = String::from("| command | what it does |\n|---|---|\n");
    for (name, about) in commands() {
        t.push_str(&format!(
            "| `panel {name}` | {} |\n",
            about.replace('|', "\\|")
        ));
    }
    t
}

/// The README's text between `<!-- map:NAME -->` and `<!-- /map:NAME -->`.
fn block<'a>(readme: &'a str, name: &str) -> &'a str {
    let open = format!("<!-- map:{name} -->\n");
    let close = format!("<!-- /map:{name} -->");
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README.md has no {open:?} marker"))
        + open.len();
    let end = readme[start..]
        .find(&close)
        .unwrap_or_else(|| panic!("README.md has no {close:?} marker"));
    &readme[start..start + end]
}

#[test]
fn the_readme_lists_every_crate_with_its_own_first_sentence() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let want = crate_table(&root);
    assert_eq!(
        block(&readme, "crates"),
        want,
        "README.md's crate table is not the workspace's; paste this between the markers:\n{want}"
    );
}

#[test]
fn the_readme_lists_every_panel_command_as_its_help_says() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let want = command_table();
    assert_eq!(
        block(&readme, "commands"),
        want,
        "README.md's command table is not `panel --help`'s; paste this between the markers:\n{want}"
    );
}
