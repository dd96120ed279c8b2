from __future__ import annotations

from django import forms


class AddForm(forms.Form):
    """Two numbers for the ``add`` task; ``fail`` makes the job raise instead."""

    a = forms.IntegerField(initial=2)
    b = forms.IntegerField(initial=3)
    fail = forms.BooleanField(required=False, help_text="Make the job fail (see it retried, then in the admin).")
