//! Every `console` block of the README runs as shown: the command, its exit code (`? N`)
//! and its output, where `[..]` stands for a run's own numbers (a time) and `...` for
//! lines left out. A README that drifts from the binary fails here.

#[test]
fn the_readme_commands_print_what_the_readme_shows() {
    trycmd::TestCases::new()
        .register_bin("locklab", trycmd::cargo::cargo_bin!("locklab"))
        .case("README.md");
}
