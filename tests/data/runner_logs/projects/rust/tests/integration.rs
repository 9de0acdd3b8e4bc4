#[test]
fn integration_passes() {
    assert_eq!(sample::add(2, 2), 4);
}
