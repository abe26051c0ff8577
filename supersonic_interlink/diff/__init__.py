"""``./supersonic diff <stack>``: the stack rendered at a base git ref and in the working tree (``sides``), compared
object by object and written as one text for the terminal and the pull request (``report``)."""
