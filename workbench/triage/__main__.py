"""``python -m workbench.triage``: print the triage rules."""
from . import classify, gold

print(gold.__doc__)
print(classify.__doc__)
