"""What crates/ontap-client sends, read from its source so the suite follows it: the `fields=`
constants of model.rs and the path/query of every `self.url(...)` call in its source files.
"""

import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "crates" / "ontap-client" / "src"


def constants() -> dict:
    """`pub(crate) const NAME: &str = "…";` of model.rs."""
    text = (SRC / "model.rs").read_text()
    return dict(re.findall(r'const (\w+): &str\s*=\s*"([^"]*)";', text))


def url_calls() -> list:
    """[(path segments, [(query key, value or const name)])] for every `self.url(&[…], &[…])`."""
    consts = constants()
    calls = []
    for source in sorted(SRC.rglob("*.rs")):
        text = source.read_text()
        for segs, query in re.findall(r"self\.url\(\s*&\[(.*?)\],\s*&\[(.*?)\],?\s*\)", text, re.S):
            path = [s.strip() for s in segs.split(",") if s.strip()]
            pairs = []
            for key, value in re.findall(r'\(\s*"([^"]+)"\s*,\s*("[^"]*"|[A-Za-z_]\w*)\s*\)', query):
                if value.startswith('"'):
                    pairs.append((key, value.strip('"')))
                else:
                    pairs.append((key, consts.get(value, value)))
            calls.append((path, pairs))
    # The job poll builds its URL from the job link, not with self.url: its fields literal.
    text = (SRC / "jobs.rs").read_text()
    job_fields = re.findall(r'\[\("fields", "([^"]+)"\)\]', text)
    assert job_fields, "the job poll's fields literal moved: follow it here"
    for fields in job_fields:
        calls.append((['"api"', '"cluster"', '"jobs"', "uuid"], [("fields", fields)]))
    return calls


def rest_path(segments: list) -> str:
    """`["api", "svm", "svms", uuid]` → `/api/svm/svms/{}` (a variable segment is `{}`)."""
    parts = [s.strip('"') if s.startswith('"') else "{}" for s in segments]
    return "/" + "/".join(parts)


def job_poll_fields() -> str:
    """The `fields=` of the client's job poll."""
    text = (SRC / "jobs.rs").read_text()
    return re.findall(r'\[\("fields", "([^"]+)"\)\]', text)[0]
