"""Links into the cost calculator that carry what they price: GPU, GPU count, price, currency and request shape."""

from tco import TcoInputs
from ui.params import to_params

CARRIED = ("gpu", "gpus", "price", "currency", "in_tokens", "out_tokens")  # written even when they are the defaults


def tco_link_params(inputs: TcoInputs, *, priced: bool = True) -> dict[str, str]:
    """The /tco query parameters of `inputs`: defaults omitted, except what a link must always say it prices.

    /tco fills a GPU's own catalog price when a link names the GPU without a price, so a price that happens to equal
    the page's default (the handbook's 15 CNY) is written out too. `priced=False`: the GPU has no price and the link
    carries none (the page then asks for one instead of using a stand-in).
    """
    every = to_params(inputs, keep_defaults=True)
    params = {**{key: every[key] for key in CARRIED}, **to_params(inputs)}
    if not priced:
        params.pop("price", None)
    return params
