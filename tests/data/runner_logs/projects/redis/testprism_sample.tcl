# Runner-log fixture: a unit for redis's own test helper (tests/test_helper.tcl), every outcome
# it prints and awkward names; make_logs.sh copies it into a redis checkout's tests/unit/.
start_server {tags {"testprism"}} {
    test {SET and GET - passes} {
        r set x 1
        r get x
    } {1}

    test {INCR fails: oddly named (on purpose)} {
        r set y 1
        r incr y
    } {3}

    test {skipped one} {
        r ping
    } {PONG}

    test {ignored by its tag} {
        r ping
    } {PONG} {slow}

    test {ünï [brackets] in a name} {
        assert_equal PONG [r ping]
    }

    test {raises an error} {
        r nosuchcommand
    }

    test {after the error} {
        r ping
    } {PONG}
}
