"""serverLoad.metric selects this stack's release and namespace and nothing else (KEDA scales on what it sums)."""

from __future__ import annotations

import pytest

from supersonic_interlink.config.pulumi_config import borrowed_selectors

RELEASE, NAMESPACE = "supersonic-interlink", "cms"


@pytest.mark.parametrize(
    "metric",
    [
        'sum(nv_inference_queue_duration_us{release=~"supersonic-interlink", namespace=~"cms"})',
        'sum(x{release="supersonic-interlink", namespace="cms"})',
        r'sum(x{release=~"supersonic\-interlink", namespace=~"cms"})',
        'sum(x{release=~"supersonic-interlink", namespace=~"cms", pod!~"old-.*"})',
        "",  # the chart's own metric
        "[secret]",  # a secret rendered offline: its text is not here
    ],
)
def test_a_metric_that_selects_only_this_release_passes(metric: str) -> None:
    assert borrowed_selectors(metric, RELEASE, NAMESPACE) == []


@pytest.mark.parametrize(
    ("metric", "says"),
    [
        ('sum(x{release=~"supersonic-gpu", namespace=~"cms"})', 'release=~"supersonic-gpu" selects another release'),
        ('sum(x{release=~"supersonic-interlink|x", namespace=~"cms"})', 'release=~"supersonic-interlink|x" selects'),
        ('sum(x{release=~".*", namespace=~"cms"})', 'release=~".*" selects another release'),
        ('sum(x{release=~"supersonic-interlink", namespace=~".+"})', 'namespace=~".+" selects another namespace'),
        ('sum(x{app=~"supersonic", namespace=~"cms"})', "no release selector"),
        ('sum(x{release=~"supersonic-interlink"})', "no namespace selector"),
    ],
)
def test_a_metric_that_could_sum_another_release_is_refused_naming_the_selector(metric: str, says: str) -> None:
    problems = borrowed_selectors(metric, RELEASE, NAMESPACE)
    assert len(problems) == 1 and says in problems[0], problems
    assert problems[0].startswith("supersonic-interlink:serverLoad.metric: ")
    secret = borrowed_selectors(metric.replace("supersonic-gpu", "elsewhere-7"), RELEASE, NAMESPACE, secret=True)
    assert len(secret) == 1 and "elsewhere-7" not in secret[0], "a secret metric is named by its label, not its text"
