"""``./supersonic diff <stack>``: what a change deploys, object by object: the stack rendered at a base git ref and
in the working tree (``sides``), compared object by object (``objdiff.compare_objects``) and written as one text
for the terminal and the pull request (``report``)."""
