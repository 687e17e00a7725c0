"""The official few-shot examples of `BIP-ALM/testing_gpt.py` (spec §3.3, Appendix A), verbatim: data, not code.

`TWO_SHOT` is `ONE_SHOT`, 20 spaces (a backslash line continuation inside the official string literal) and a second
example; both end each example with `Answer: <letter>. ` and three newlines. The unit tests pin their sha256.
"""

ONE_SHOT = (
    "What's inside the apartment: The apartment consists of a living room, bedroom, kitchen, and bathroom. \nIn the living "
    "room, there is a coffee table, a sofa, a cabinet, and a desk. The cabinet houses a dish bowl, a water glass, a bag of "
    "chips, and a bottle of wine. \nThe bedroom is furnished with a desk and a coffee table, which has three water glasses "
    "on it. \nThe kitchen is equipped with four cabinets, a fridge, a microwave, a kitchen table, and a stove. The first "
    "cabinet, from left to right, contains a plate and a bottle of wine. The second cabinet holds a wine glass and a water "
    "glass. The third cabinet stores two apples, while the fourth cabinet has a wine glass and an apple. The fridge contains "
    "a salmon and an apple. Inside the microwave, there is a condiment bottle and a salmon. The stove houses a cupcake and a "
    "plate. \nThe bathroom features a cabinet, which is currently empty. \nActions taken by Mary: Mary is situated in the "
    "living room. She proceeds to the kitchen and heads towards the second kitchen cabinet. She opens it, then promptly "
    "closes it. Mary then makes her way to the bathroom, approaching the bathroom cabinet. She opens it, then shuts it. She "
    "returns to the kitchen, moving towards the microwave, which she opens and then closes. She then opens the fridge, and "
    "after a moment, closes it. Mary then walks towards the third kitchen cabinet, opens it, and closes it. She repeats this "
    "action with the fourth kitchen cabinet. She then opens the stove, and after a moment, closes it. She walks towards the "
    "first kitchen cabinet, opens it, and then closes it. Finally, Mary returns to the living room, preparing to open "
    "another cabinet. \nQuestion: If Mary has been trying to get a bag of chips, which one of the following statements is "
    "more likely to be true? (a) Mary thinks that the bag of chips is not inside the cabinet. (b) Mary thinks that the bag "
    "of chips is inside the cabinet. Please respond with either a or b. \nAnswer: b. \n\n\n"
)
"""`one_shot_prompt`: 1,960 characters, sha256 6a9c333469a6..."""

TWO_SHOT = ONE_SHOT + " " * 20 + (
    "What's inside the apartment: The apartment consists of a bedroom, bathroom, living room, and kitchen. \nIn the bedroom, "
    "there is a desk and a coffee table, with a dish bowl placed on the coffee table. \nThe bathroom houses a cabinet, which "
    "is currently empty. \nThe living room is furnished with a desk, coffee table, cabinet, and sofa. On the coffee table, "
    "there is a remote control, a wine glass, and a dish bowl. The cabinet contains a bag of chips, a water glass, a "
    "condiment bottle, and two wine glasses. \nThe kitchen is equipped with four cabinets, a fridge, a stove, a microwave, "
    "and a kitchen table. The first kitchen cabinet, from left to right, contains an apple, while the fourth is empty. "
    "Inside the fridge, there are two cupcakes, a bottle of wine, three apples, a dish bowl, and a plate. The third kitchen "
    "cabinet is empty. The stove houses a salmon. The second kitchen cabinet contains a dish bowl and a wine glass. Lastly, "
    "there is a cupcake in the microwave. \nActions taken by Elizabeth: Elizabeth is situated in the kitchen. She strides "
    "towards the first kitchen cabinet, opens it, then promptly shuts it. Subsequently, she opens the third kitchen cabinet "
    "and closes it as well, before finally making her way towards the fridge. \nQuestion: If Elizabeth doesn't think there "
    "is a bottle of wine inside the fridge, which one of the following statements is more likely to be true? (a) Elizabeth "
    "has been trying to get a remote control. (b) Elizabeth has been trying to get a bottle of wine. Please respond with "
    "either a or b. \nAnswer: a. \n\n\n"
)
"""`two_shot_prompt`: 3,532 characters, sha256 4c9d358d00b6..."""

SHOTS = {0: "", 1: ONE_SHOT, 2: TWO_SHOT}
"""The prefix of each `shots` setting: the official `--few_shot 0|1|2`."""
