"""`python -m pipeline fetch webcams`: a provider's catalog (provider.py) and the operator's
own cameras' images (owned.py)."""
