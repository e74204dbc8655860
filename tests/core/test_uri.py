import pytest
from robohal.errors import UriError
from robohal.uri import parse_uri


@pytest.mark.parametrize(
    "text, scheme, host, port, path, params",
    [
        ("franka://172.16.0.2?model=franka.fr3", "franka", "172.16.0.2", None, "", {"model": "franka.fr3"}),
        ("abb-egm://0.0.0.0:6510?model=abb.irb1410", "abb-egm", "0.0.0.0", 6510, "", {"model": "abb.irb1410"}),
        ("arduino-planar:///dev/ttyACM0?baud=115200", "arduino-planar", "", None, "/dev/ttyACM0", {"baud": "115200"}),
        ("sim://?model=generic.planar2&rate=100", "sim", "", None, "", {"model": "generic.planar2", "rate": "100"}),
        ("FRANKA://sim", "franka", "sim", None, "", {}),
        ("abb-egm://[::1]:6511", "abb-egm", "::1", 6511, "", {}),
    ],
)
def test_parses_the_documented_forms(text, scheme, host, port, path, params):
    uri = parse_uri(text)
    assert (uri.scheme, uri.host, uri.port, uri.path, dict(uri.params)) == (scheme, host, port, path, params)
    assert parse_uri(str(uri)) == uri  # round trip


def test_reserved_simulator_host():
    assert parse_uri("franka://sim?model=franka.fr3").wants_simulator
    assert not parse_uri("franka://172.16.0.2").wants_simulator


@pytest.mark.parametrize(
    "bad, why",
    [
        ("", "non-empty"),
        ("172.16.0.2", r"not a robot URI: expected SCHEME://.* such as sim://\?model=generic.planar2 \(`robohal plugins`"),
        ("abb-egm://host:notaport", "valid"),
        ("abb-egm://host:99999", "valid"),
        ("sim://?model=a&model=b", "twice"),
        ("sim://?model", "malformed"),
        ("sim://x#frag", "fragment"),
    ],
)
def test_malformed_uris_say_why(bad, why):
    with pytest.raises(UriError, match=why):
        parse_uri(bad)


def test_typed_parameters_reject_garbage_clearly():
    uri = parse_uri("sim://?rate=fast&lag=nan&realtime=maybe&n=-3")
    with pytest.raises(UriError, match="rate"):
        uri.get_float("rate", 1.0)
    with pytest.raises(UriError, match="lag"):
        uri.get_float("lag", 1.0)
    with pytest.raises(UriError, match="realtime"):
        uri.get_bool("realtime", True)
    with pytest.raises(UriError, match=">= 0"):
        uri.get_int("n", 1, minimum=0)
    assert uri.get_float("missing", 2.5) == 2.5
    assert parse_uri("sim://?realtime=0").get_bool("realtime", True) is False


def test_a_password_in_a_parameter_s_url_is_never_shown():
    uri = parse_uri("abb-egm://0.0.0.0:6510?rws=http://operator:s3cret@10.0.0.1&model=abb.irb1410")
    from urllib.parse import unquote

    assert "s3cret" not in unquote(str(uri)) and "operator:***@10.0.0.1" in unquote(str(uri))
    assert uri.params["rws"] == "http://operator:s3cret@10.0.0.1"  # the backend sees it, and refuses it
